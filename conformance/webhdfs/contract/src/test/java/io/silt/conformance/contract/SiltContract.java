package io.silt.conformance.contract;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.contract.AbstractBondedFSContract;

/**
 * Binds Hadoop's FileSystem contract tests to a running silt WebHDFS head.
 * The endpoint comes from fs.contract.test.fs.webhdfs in
 * contract-test-options.xml (written by conformance/suites/webhdfs.sh); the
 * contract's options (what silt's WebHDFS supports) are in
 * contract/silt-webhdfs.xml.
 *
 * <p>The test path is a stream seeded through silt's native API, not /test:
 * the head is read-only, so the tests cannot make their own directory.
 */
public class SiltContract extends AbstractBondedFSContract {
  /** The seeded stream the tests run in; the suite creates it. */
  public static final String TEST_PATH_KEY = "silt.contract.test.path";

  public SiltContract(Configuration conf) {
    super(conf);
    addConfResource("contract/silt-webhdfs.xml");
  }

  @Override
  public String getScheme() {
    return "webhdfs";
  }

  @Override
  public Path getTestPath() {
    return new Path(getConf().getTrimmed(TEST_PATH_KEY, "/contract/fixtures"));
  }
}
