package io.silt.conformance;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.CountDownLatch;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * A real, single-datanode HDFS on 127.0.0.1 for the conformance suites and
 * benchmarks: Apache Hadoop's own MiniDFSCluster (the namenode and datanode
 * classes a production cluster runs), with WebHDFS on the namenode's HTTP
 * port. See conformance/hdfs/README.md for the command line.
 *
 * DIR holds the name and data directories. An empty or missing DIR is
 * formatted; one that holds a cluster from an earlier run is started as it
 * was, with its files. DIR is left in place at exit.
 *
 * Once the cluster is up and out of safe mode it writes a ready file (one
 * JSON object, renamed into place so that a reader never sees half of it)
 * naming the namenode RPC address and the WebHDFS base URL. It shuts the
 * cluster down on SIGTERM/SIGINT and, with --exit-on-stdin-eof, when its
 * standard input closes (so a parent that dies takes the cluster with it).
 */
public final class MiniHdfs {
    private MiniHdfs() {}

    private static void usage(String msg) {
        System.err.println("minihdfs: " + msg);
        System.err.println("usage: start.sh --dir DIR --ready FILE [--nn-port N] [--http-port N] [--block-size BYTES] [--exit-on-stdin-eof]");
        System.exit(2);
    }

    public static void main(String[] args) throws Exception {
        String dir = null, ready = null;
        int nnPort = 0, httpPort = 0;
        long blockSize = 0;
        boolean stdinEOF = false;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--exit-on-stdin-eof")) {
                stdinEOF = true;
                continue;
            }
            if (i + 1 >= args.length) {
                usage(a + " needs a value");
            }
            String v = args[++i];
            switch (a) {
                case "--dir": dir = v; break;
                case "--ready": ready = v; break;
                case "--nn-port": nnPort = port(a, v); break;
                case "--http-port": httpPort = port(a, v); break;
                case "--block-size": blockSize = size(a, v); break;
                default: usage("unknown argument " + a);
            }
        }
        if (dir == null || ready == null) {
            usage("--dir and --ready are required");
        }

        Configuration conf = new HdfsConfiguration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, dir);
        // Loopback only, and datanodes advertise the address clients can
        // reach (WebHDFS redirects and the Go client's block transfers).
        conf.set("dfs.datanode.hostname", "127.0.0.1");
        conf.set("dfs.namenode.rpc-bind-host", "127.0.0.1");
        conf.set("dfs.namenode.http-bind-host", "127.0.0.1");
        conf.setBoolean("dfs.webhdfs.enabled", true);
        // One datanode: a file is complete with one replica, and the
        // client must not look for another datanode to replace a failed one.
        conf.setInt("dfs.replication", 1);
        conf.set("dfs.client.block.write.replace-datanode-on-failure.policy", "NEVER");
        // Finalized blocks are fsynced, as a production cluster that cares
        // about power loss configures it.
        conf.setBoolean("dfs.datanode.synconclose", true);
        // Tests may ask for small blocks, so that a modest file spans
        // several of them.
        conf.setLong("dfs.namenode.fs-limits.min-block-size", 4096);
        if (blockSize > 0) {
            conf.setLong("dfs.blocksize", blockSize);
        }

        // A DIR that already holds a cluster is started again as it was
        // (same files, same block pool), so that a suite can stop HDFS
        // and bring it back; an empty or missing one is formatted.
        File base = new File(dir);
        String[] existing = base.list();
        boolean format = existing == null || existing.length == 0;
        MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf)
                .numDataNodes(1)
                .nameNodePort(nnPort)
                .nameNodeHttpPort(httpPort)
                .format(format)
                .build();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            // DIR stays: its owner removes it, or starts it again.
            cluster.shutdown(false);
            stopped.countDown();
        }));
        cluster.waitClusterUp();
        cluster.waitActive();

        String nn = "127.0.0.1:" + cluster.getNameNodePort();
        String web = "http://127.0.0.1:" + cluster.getNameNode().getHttpAddress().getPort();
        String json = "{\"namenode\":\"" + nn + "\",\"webhdfs\":\"" + web + "/webhdfs/v1\"}\n";
        Path readyPath = Paths.get(ready);
        Path tmp = readyPath.resolveSibling("." + readyPath.getFileName() + ".tmp");
        Files.write(tmp, json.getBytes(StandardCharsets.UTF_8));
        Files.move(tmp, readyPath, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        System.out.println("minihdfs ready: namenode " + nn + ", webhdfs " + web + "/webhdfs/v1");
        System.out.flush();

        if (stdinEOF) {
            InputStream in = System.in;
            byte[] buf = new byte[256];
            try {
                while (in.read(buf) >= 0) {
                    // Input is ignored; only its end matters.
                }
            } catch (IOException e) {
                // A broken stdin is the same signal as a closed one.
            }
            System.exit(0);
        }
        stopped.await();
    }

    private static long size(String flag, String v) {
        try {
            long n = Long.parseLong(v);
            if (n >= 4096 && n % 512 == 0) {
                return n;
            }
        } catch (NumberFormatException e) {
            // fall through to the usage error
        }
        usage(flag + " " + v + ": want a byte count, a multiple of 512 and at least 4096");
        return 0;
    }

    private static int port(String flag, String v) {
        try {
            int p = Integer.parseInt(v);
            if (p >= 0 && p <= 65535) {
                return p;
            }
        } catch (NumberFormatException e) {
            // fall through to the usage error
        }
        usage(flag + " " + v + ": want a port number 0-65535");
        return 0;
    }
}
