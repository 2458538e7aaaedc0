package io.silt.conformance;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.security.PrivilegedExceptionAction;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.ipc.RemoteException;
import org.apache.hadoop.security.UserGroupInformation;

/**
 * What Hadoop's WebHdfsFileSystem makes of the answers where HDFS 3.4 and
 * an earlier silt differed (args: URI FILE DIR, FILE a non-empty file, DIR
 * a directory). Each check states what the client does against HDFS
 * itself, for a user who is not the HDFS superuser; run against a
 * MiniDFSCluster holding the same tree, every check passes too. Prints
 * "ok NAME" or "FAIL NAME: why" per check; the suite counts the lines.
 */
public class ParityProbe {
  interface Check {
    String run() throws Exception; // null: passed; else why it failed
  }

  interface Call {
    void run() throws Exception;
  }

  static void check(String name, Check c) {
    String why;
    try {
      why = c.run();
    } catch (Exception e) {
      why = "unexpected " + e.getClass().getName() + ": " + e.getMessage();
    }
    System.out.println(why == null ? "ok " + name : "FAIL " + name + ": " + why);
  }

  /** The class the call threw (a RemoteException's remote class), or "none". */
  static String thrown(Call c, StringBuilder message) {
    try {
      c.run();
      return "none";
    } catch (RemoteException e) {
      message.append(e.getMessage());
      return e.getClassName();
    } catch (Exception e) {
      message.append(e.getMessage());
      return e.getClass().getName();
    }
  }

  static String expect(Call c, String wantClass, String wantInMessage) {
    StringBuilder msg = new StringBuilder();
    String got = thrown(c, msg);
    if (!got.equals(wantClass) || !msg.toString().contains(wantInMessage)) {
      return "threw " + got + " (" + msg + "), want " + wantClass + " with \"" + wantInMessage + "\"";
    }
    return null;
  }

  public static void main(String[] args) throws Exception {
    Configuration conf = new Configuration();
    URI uri = URI.create(args[0]);
    FileSystem fs = FileSystem.newInstance(uri, conf);
    Path file = new Path(args[1]);
    Path dir = new Path(args[2]);
    long len = fs.getFileStatus(file).getLen();
    Path below = new Path(file, "child");
    String notDir = file.toUri().getPath() + " (is not a directory)";

    check("a read at the very end returns -1", () -> {
      try (FSDataInputStream in = fs.open(file)) {
        in.seek(len);
        if (in.read() != -1) return "read() after seek(length)";
        byte[] b = new byte[10];
        return in.read(len, b, 0, b.length) == -1 ? null : "positional read at the length";
      }
    });
    // The data URL says EOFException past the end; the client then asks the
    // NameNode again with the offset, which refuses it with IOException.
    check("readFully past the end throws the NameNode's IOException", () -> {
      try (FSDataInputStream in = fs.open(file)) {
        return expect(() -> in.readFully(len + 1, new byte[16]), "java.io.IOException",
            "Offset=" + (len + 1) + " out of the range [0, " + len + ")");
      }
    });
    check("a directory opens, and its first read throws FileNotFoundException", () -> {
      try (InputStream in = fs.open(dir)) {
        return expect(in::read, "java.io.FileNotFoundException", "Path is not a file");
      }
    });
    check("getFileStatus below a file: AccessControlException",
        () -> expect(() -> fs.getFileStatus(below), "org.apache.hadoop.security.AccessControlException", notDir));
    check("exists below a file throws AccessControlException",
        () -> expect(() -> fs.exists(below), "org.apache.hadoop.security.AccessControlException", notDir));
    check("listStatus below a file: AccessControlException",
        () -> expect(() -> fs.listStatus(below), "org.apache.hadoop.security.AccessControlException", notDir));
    check("open below a file: AccessControlException",
        () -> expect(() -> fs.open(below).close(), "org.apache.hadoop.security.AccessControlException", notDir));
    check("getXAttr user.*: XAttrNotFoundException",
        () -> expect(() -> fs.getXAttr(file, "user.silt"), "org.apache.hadoop.hdfs.protocol.XAttrNotFoundException",
            "At least one of the attributes provided was not found."));
    check("getXAttr trusted.*: AccessControlException",
        () -> expect(() -> fs.getXAttr(file, "trusted.silt"), "org.apache.hadoop.security.AccessControlException",
            "User doesn't have permission for xattr: trusted.silt"));
    check("getXAttr without a namespace: HadoopIllegalArgumentException",
        () -> expect(() -> fs.getXAttr(file, "silt"), "org.apache.hadoop.HadoopIllegalArgumentException",
            "An XAttr name must be prefixed with user/trusted/security/system/raw"));
    check("a proxy user is refused with AuthorizationException", () -> {
      UserGroupInformation proxy = UserGroupInformation.createProxyUser("silt-nobody", UserGroupInformation.getCurrentUser());
      return expect(() -> proxy.doAs((PrivilegedExceptionAction<Object>) () -> {
        try (FileSystem pfs = FileSystem.newInstance(uri, conf)) {
          return pfs.getFileStatus(file);
        }
      }), "org.apache.hadoop.security.authorize.AuthorizationException", "is not allowed to impersonate silt-nobody");
    });
    check("the root's namespace quota is Long.MAX_VALUE", () -> {
      long q = fs.getQuotaUsage(new Path("/")).getQuota();
      long c = fs.getContentSummary(new Path("/")).getQuota();
      return q == Long.MAX_VALUE && c == Long.MAX_VALUE ? null : "quota usage " + q + ", content summary " + c;
    });
    fs.close();
  }
}
