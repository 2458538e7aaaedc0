package io.silt.conformance.contract;

import java.io.IOException;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * What the contract tests' base class does to the test directory, made to
 * fit a read-only store: setup's mkdirs of the test path checks that the
 * seeded directory exists instead of creating it, and teardown deletes
 * nothing.
 */
final class ReadOnly {
  private ReadOnly() {}

  static void requireDir(FileSystem fs, Path path) throws IOException {
    FileStatus st = fs.getFileStatus(path);
    if (!st.isDirectory()) {
      throw new IOException(path + " is not a seeded directory");
    }
  }
}
