package io.silt.conformance;

import java.net.URI;
import java.nio.charset.StandardCharsets;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Tries each WebHDFS write a client can make against DIR (args: URI DIR) and
 * prints, per operation, "op exception-class" for the exception it threw, or
 * "op OK" if it did not throw. Exits 0; the suite checks the lines.
 */
public class WriteProbe {
  interface Op {
    void run() throws Exception;
  }

  static void probe(String name, Op op) {
    try {
      op.run();
      System.out.println(name + " OK");
    } catch (Exception e) {
      System.out.println(name + " " + e.getClass().getName());
    }
  }

  public static void main(String[] args) throws Exception {
    Configuration conf = new Configuration();
    FileSystem fs = FileSystem.get(URI.create(args[0]), conf);
    Path dir = new Path(args[1]);
    Path file = new Path(dir, "probe.txt");
    probe("mkdirs", () -> fs.mkdirs(new Path(dir, "probe-dir")));
    probe("create", () -> {
      try (FSDataOutputStream out = fs.create(file, true)) {
        out.write("x\n".getBytes(StandardCharsets.UTF_8));
      }
    });
    probe("append", () -> fs.append(new Path(dir, "_manifest.json")).close());
    probe("delete", () -> fs.delete(new Path(dir, "_manifest.json"), true));
    probe("rename", () -> fs.rename(new Path(dir, "_manifest.json"), new Path(dir, "moved.json")));
    probe("setPermission", () -> fs.setPermission(new Path(dir, "_manifest.json"), new FsPermission((short) 0777)));
    probe("setOwner", () -> fs.setOwner(new Path(dir, "_manifest.json"), "x", "y"));
    probe("setTimes", () -> fs.setTimes(new Path(dir, "_manifest.json"), 0, 0));
  }
}
