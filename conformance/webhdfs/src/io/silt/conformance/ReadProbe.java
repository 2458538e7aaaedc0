package io.silt.conformance;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileChecksum;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FsServerDefaults;
import org.apache.hadoop.fs.FsStatus;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.QuotaUsage;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.fs.permission.FsAction;

/**
 * Exercises WebHdfsFileSystem's read API against FILE (args: URI FILE LOCAL),
 * where LOCAL holds the bytes FILE must have. Prints "ok NAME" or
 * "FAIL NAME: why" per check; the suite counts the lines.
 */
public class ReadProbe {
  interface Check {
    String run() throws Exception; // null: passed; else why it failed
  }

  static void check(String name, Check c) {
    String why;
    try {
      why = c.run();
    } catch (Exception e) {
      why = e.getClass().getName() + ": " + e.getMessage();
    }
    System.out.println(why == null ? "ok " + name : "FAIL " + name + ": " + why);
  }

  static String eq(Object got, Object want) {
    return got.equals(want) ? null : "got " + got + ", want " + want;
  }

  public static void main(String[] args) throws Exception {
    FileSystem fs = FileSystem.get(URI.create(args[0]), new Configuration());
    Path file = new Path(args[1]);
    byte[] want = Files.readAllBytes(Paths.get(args[2]));
    Path dir = file.getParent();

    check("open+read whole file", () -> {
      try (InputStream in = fs.open(file)) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        in.transferTo(out);
        return Arrays.equals(out.toByteArray(), want) ? null : "bytes differ";
      }
    });
    check("seek, positional read, seek back", () -> {
      try (FSDataInputStream in = fs.open(file)) {
        int mid = want.length / 2;
        in.seek(mid);
        byte[] b = new byte[100];
        in.readFully(b);
        if (!Arrays.equals(b, Arrays.copyOfRange(want, mid, mid + 100))) return "after seek";
        byte[] c = new byte[50];
        in.readFully(7, c);
        if (!Arrays.equals(c, Arrays.copyOfRange(want, 7, 57))) return "positional";
        in.seek(0);
        if (in.read() != (want[0] & 0xff)) return "seek back";
        if (in.getPos() != 1) return "getPos " + in.getPos();
        in.seek(want.length);
        return in.read() == -1 ? null : "read past the end";
      }
    });
    check("getFileStatus", () -> {
      FileStatus st = fs.getFileStatus(file);
      return eq(st.getLen() + " " + st.isFile() + " " + st.getBlockSize() + " " + st.getPermission(),
          want.length + " true 134217728 r--r--r--");
    });
    check("getFileBlockLocations", () -> {
      BlockLocation[] bl = fs.getFileBlockLocations(fs.getFileStatus(file), 0, want.length);
      // Hadoop may turn the host silt names (127.0.0.1) into its DNS name.
      return eq(bl.length + " " + bl[0].getOffset() + " " + bl[0].getLength() + " " + bl[0].getHosts().length,
          "1 0 " + want.length + " 1");
    });
    check("listStatusIterator", () -> {
      List<String> names = new ArrayList<>();
      RemoteIterator<FileStatus> it = fs.listStatusIterator(dir);
      while (it.hasNext()) names.add(it.next().getPath().getName());
      return names.contains(file.getName()) ? null : "missing " + file.getName() + " in " + names;
    });
    check("listFiles recursive", () -> {
      int n = 0;
      RemoteIterator<LocatedFileStatus> it = fs.listFiles(dir.getParent(), true);
      while (it.hasNext()) {
        LocatedFileStatus s = it.next();
        if (s.getBlockLocations().length == 0 && s.getLen() > 0) return "no blocks for " + s.getPath();
        n++;
      }
      return n >= 2 ? null : "only " + n + " files";
    });
    check("globStatus", () -> {
      FileStatus[] g = fs.globStatus(new Path(dir.getParent(), "segment=*/*.txt"));
      return g != null && g.length >= 2 ? null : "glob found " + (g == null ? 0 : g.length);
    });
    check("getFileChecksum", () -> {
      FileChecksum c = fs.getFileChecksum(file);
      return eq(c.getAlgorithmName() + " " + c.getLength(), "MD5-of-0MD5-of-512CRC32C 28");
    });
    check("access r-x on a directory, r-- on a file", () -> {
      fs.access(dir, FsAction.READ_EXECUTE);
      fs.access(file, FsAction.READ);
      return null;
    });
    check("access w is refused", () -> {
      try {
        fs.access(file, FsAction.WRITE);
        return "allowed";
      } catch (org.apache.hadoop.security.AccessControlException e) {
        return null;
      }
    });
    check("getServerDefaults", () -> {
      FsServerDefaults d = fs.getServerDefaults(file);
      return eq(d.getBlockSize() + " " + d.getBytesPerChecksum(), "134217728 512");
    });
    check("getHomeDirectory, getTrashRoot", () ->
        eq(fs.getHomeDirectory().toUri().getPath() + " " + fs.getTrashRoot(file).toUri().getPath(),
            "/user/" + System.getenv("HADOOP_USER_NAME") + " /user/" + System.getenv("HADOOP_USER_NAME") + "/.Trash"));
    check("getXAttrs, getAclStatus", () -> {
      if (!fs.getXAttrs(file).isEmpty()) return "xattrs";
      return eq(fs.getAclStatus(dir).getEntries().size(), 0);
    });
    check("getStatus", () -> {
      FsStatus s = fs.getStatus(dir);
      return s.getUsed() >= want.length && s.getRemaining() == 0 ? null : "status " + s.getUsed() + "/" + s.getRemaining();
    });
    check("getQuotaUsage", () -> {
      QuotaUsage q = fs.getQuotaUsage(dir);
      return q.getQuota() == -1 && q.getSpaceConsumed() >= want.length ? null : "quota usage " + q;
    });
    check("exists on a missing path", () -> fs.exists(new Path(dir, "no-such-file")) ? "exists" : null);
    check("open a missing path: FileNotFoundException", () -> {
      try (InputStream in = fs.open(new Path(dir, "no-such-file"))) {
        in.read();
        return "opened";
      } catch (java.io.FileNotFoundException e) {
        return null;
      }
    });
  }
}
