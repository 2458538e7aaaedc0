package io.silt.conformance;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.PrivilegedExceptionAction;
import java.util.Arrays;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.security.token.TokenIdentifier;
import org.apache.hadoop.security.token.delegation.AbstractDelegationTokenIdentifier;

/**
 * Delegation tokens through Hadoop's own API (args: URI FILE LOCAL OWNER
 * RENEWER KIND TOKEN): FileSystem.getDelegationToken, Token.decodeIdentifier,
 * Token.renew and Token.cancel, and reading FILE as a user whose only
 * credential is the token in its UGI, so that WebHdfsFileSystem sends
 * delegation=. The caller's own credential is OWNER's silt bearer token
 * TOKEN, sent through Hadoop's OAuth2 support with StaticTokenProvider. Prints "ok NAME" or
 * "FAIL NAME: why" per check.
 */
public class DelegationProbe {
  interface Check {
    String run() throws Exception; // null: passed; else why it failed
  }

  static void check(String name, Check c) {
    String why;
    try {
      why = c.run();
    } catch (Throwable e) {
      why = e.getClass().getName() + ": " + e.getMessage();
    }
    System.out.println(why == null ? "ok " + name : "FAIL " + name + ": " + why);
  }

  static String eq(Object got, Object want) {
    return got.equals(want) ? null : "got " + got + ", want " + want;
  }

  static byte[] readAll(FileSystem fs, Path p) throws Exception {
    try (InputStream in = fs.open(p)) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      in.transferTo(out);
      return out.toByteArray();
    }
  }

  /** Reads p as a fresh user holding only tok, without the OAuth2 keys. */
  static byte[] readWithToken(URI uri, Token<?> tok, Path p) throws Exception {
    UserGroupInformation ugi = UserGroupInformation.createRemoteUser("nobody");
    ugi.addToken(tok);
    Configuration plain = new Configuration();
    plain.setBoolean("dfs.webhdfs.oauth2.enabled", false);
    plain.setBoolean("fs.webhdfs.impl.disable.cache", true);
    plain.setBoolean("fs.swebhdfs.impl.disable.cache", true);
    return ugi.doAs((PrivilegedExceptionAction<byte[]>) () -> {
      try (FileSystem fs = FileSystem.newInstance(uri, plain)) {
        return readAll(fs, p);
      }
    });
  }

  /** Whether e or one of its causes is Hadoop's InvalidToken. */
  static boolean invalidToken(Throwable e) {
    for (; e != null; e = e.getCause() == e ? null : e.getCause()) {
      if (e.getClass().getName().equals("org.apache.hadoop.security.token.SecretManager$InvalidToken")) {
        return true;
      }
    }
    return false;
  }

  static String rootCause(Throwable e) {
    while (e.getCause() != null && e.getCause() != e) {
      e = e.getCause();
    }
    return e.getClass().getName() + ": " + e.getMessage();
  }

  public static void main(String[] args) throws Exception {
    URI uri = URI.create(args[0]);
    Path file = new Path(args[1]);
    byte[] want = Files.readAllBytes(Paths.get(args[2]));
    String owner = args[3], renewer = args[4], kind = args[5];
    Configuration conf = new Configuration();
    conf.setBoolean("dfs.webhdfs.oauth2.enabled", true);
    conf.set("dfs.webhdfs.oauth2.access.token.provider", StaticTokenProvider.class.getName());
    conf.set(StaticTokenProvider.KEY, args[6]);
    FileSystem fs = FileSystem.get(uri, conf);

    Token<?> tok = fs.getDelegationToken(renewer);
    if (tok == null) {
      System.out.println("FAIL getDelegationToken: null token");
      return;
    }
    check("getDelegationToken: kind " + kind + ", service " + fs.getCanonicalServiceName(), () -> {
      String why = eq(tok.getKind().toString(), kind);
      return why != null ? why : eq(tok.getService().toString(), fs.getCanonicalServiceName());
    });
    long[] maxDate = {0};
    check("decodeIdentifier: a DelegationTokenIdentifier with owner, renewer and 7-day lifetime", () -> {
      TokenIdentifier ti = tok.decodeIdentifier();
      if (!(ti instanceof AbstractDelegationTokenIdentifier)) {
        return "identifier class " + (ti == null ? "null" : ti.getClass().getName());
      }
      AbstractDelegationTokenIdentifier id = (AbstractDelegationTokenIdentifier) ti;
      maxDate[0] = id.getMaxDate();
      String got = id.getOwner() + " " + id.getRenewer() + " " + (id.getMaxDate() - id.getIssueDate());
      return eq(got, owner + " " + renewer + " " + 7L * 24 * 3600 * 1000);
    });
    check("urlString round trip: Token.decodeFromUrlString(encodeToUrlString)", () -> {
      Token<TokenIdentifier> again = new Token<>();
      again.decodeFromUrlString(tok.encodeToUrlString());
      return again.equals(tok) ? null : "decoded token differs";
    });
    check("token.renew(conf) extends to now + 1 day, within maxDate", () -> {
      long now = System.currentTimeMillis();
      long exp = tok.renew(conf);
      long day = 24L * 3600 * 1000;
      return exp > now + day - 60_000 && exp <= Math.min(maxDate[0], now + day + 60_000) ? null
          : "expiry " + exp + " now " + now + " maxDate " + maxDate[0];
    });
    check("read with delegation= as a user holding only the token = local bytes", () ->
        Arrays.equals(readWithToken(uri, tok, file), want) ? null : "bytes differ");
    check("token.cancel(conf)", () -> {
      tok.cancel(conf);
      return null;
    });
    check("read with the cancelled token fails with InvalidToken", () -> {
      try {
        readWithToken(uri, tok, file);
        return "read succeeded";
      } catch (Exception e) {
        return invalidToken(e) && rootCause(e).contains("can't be found") ? null : e + " / " + rootCause(e);
      }
    });
    check("token.renew after cancel throws InvalidToken", () -> {
      try {
        tok.renew(conf);
        return "renew succeeded";
      } catch (Exception e) {
        return invalidToken(e) ? null : e + " / " + rootCause(e);
      }
    });
  }
}
