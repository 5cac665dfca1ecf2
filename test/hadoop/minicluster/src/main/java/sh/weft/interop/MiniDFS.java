package sh.weft.interop;

import java.io.File;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * Runs a real HDFS (MiniDFSCluster: one NameNode, one DataNode) on
 * loopback with its storage under the directory given as the first
 * argument and its NameNode on the port given as the second (default: a
 * free one), prints "READY hdfs://127.0.0.1:<port>", and runs until its
 * standard input closes.
 */
public final class MiniDFS {
  public static void main(String[] argv) throws Exception {
    File base = new File(argv[0]);
    Configuration conf = new Configuration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, base.getAbsolutePath());
    conf.set(DFSConfigKeys.DFS_NAMENODE_RPC_BIND_HOST_KEY, "127.0.0.1");
    conf.setBoolean(DFSConfigKeys.DFS_PERMISSIONS_ENABLED_KEY, true);
    conf.setInt(DFSConfigKeys.DFS_REPLICATION_KEY, 1);
    int port = argv.length > 1 ? Integer.parseInt(argv[1]) : 0;
    MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf).nameNodePort(port).numDataNodes(1).format(true).build();
    cluster.waitActive();
    // A world-writable /tmp and a home for every user, as a fresh cluster's
    // admin would set up.
    org.apache.hadoop.fs.FileSystem fs = cluster.getFileSystem();
    fs.mkdirs(new org.apache.hadoop.fs.Path("/tmp"));
    fs.setPermission(new org.apache.hadoop.fs.Path("/tmp"), new org.apache.hadoop.fs.permission.FsPermission((short) 01777));
    fs.mkdirs(new org.apache.hadoop.fs.Path("/user"));
    fs.setPermission(new org.apache.hadoop.fs.Path("/user"), new org.apache.hadoop.fs.permission.FsPermission((short) 01777));
    System.out.println("READY hdfs://127.0.0.1:" + cluster.getNameNodePort());
    System.out.flush();
    while (System.in.read() >= 0) {
      // runs until stdin closes
    }
    cluster.shutdown();
    System.exit(0);
  }
}
