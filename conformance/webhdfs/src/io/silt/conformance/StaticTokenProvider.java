package io.silt.conformance;

import java.io.IOException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.web.oauth2.AccessTokenProvider;

/**
 * An OAuth2 AccessTokenProvider for Hadoop's WebHdfsFileSystem that returns a
 * fixed silt bearer token from the configuration key silt.webhdfs.token, so
 * that Hadoop sends "Authorization: Bearer <token>" without a token endpoint.
 *
 * <pre>
 * -D dfs.webhdfs.oauth2.enabled=true
 * -D dfs.webhdfs.oauth2.access.token.provider=io.silt.conformance.StaticTokenProvider
 * -D silt.webhdfs.token=&lt;silt token&gt;
 * </pre>
 */
public class StaticTokenProvider extends AccessTokenProvider {
  public static final String KEY = "silt.webhdfs.token";

  private String token;

  @Override
  public void setConf(Configuration conf) {
    super.setConf(conf);
    token = conf == null ? null : conf.getTrimmed(KEY);
  }

  @Override
  public String getAccessToken() throws IOException {
    if (token == null || token.isEmpty()) {
      throw new IOException(KEY + " is not set");
    }
    return token;
  }
}
