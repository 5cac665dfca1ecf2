package sh.weft.interop;

import java.io.File;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * Runs a real HDFS (MiniDFSCluster: one NameNode, one DataNode) on
 * loopback with its storage under the directory given as the first
 * argument and its NameNode on the port given as the second (default: a
 * free one, also when "0"), prints "READY hdfs://127.0.0.1:<port>", and runs
 * until its standard input closes.
 *
 * With a host address as the third argument (a kind-style cluster's
 * control plane), it serves on that address instead, for clients in other
 * network namespaces: the NameNode listens on every address of its own
 * namespace and the DataNode on the given one, and the DataNode registers
 * through it, so that the NameNode hands clients that address for the
 * blocks (it records a DataNode at the address its registration came
 * from; MiniDFSCluster itself always points DataNodes at 127.0.0.1).
 */
public final class MiniDFS {
  public static void main(String[] argv) throws Exception {
    File base = new File(argv[0]);
    Configuration conf = new Configuration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, base.getAbsolutePath());
    String host = argv.length > 2 ? argv[2] : null;
    conf.set(DFSConfigKeys.DFS_NAMENODE_RPC_BIND_HOST_KEY, host == null ? "127.0.0.1" : "0.0.0.0");
    conf.setBoolean(DFSConfigKeys.DFS_PERMISSIONS_ENABLED_KEY, true);
    conf.setInt(DFSConfigKeys.DFS_REPLICATION_KEY, 1);
    int port = argv.length > 1 ? Integer.parseInt(argv[1]) : 0;
    MiniDFSCluster cluster;
    if (host == null) {
      cluster = new MiniDFSCluster.Builder(conf).nameNodePort(port).numDataNodes(1).format(true).build();
    } else {
      cluster = new MiniDFSCluster.Builder(conf).nameNodePort(port).numDataNodes(0).format(true).build();
      Configuration dn = new Configuration(cluster.getConfiguration(0));
      String nn = host + ":" + cluster.getNameNodePort();
      dn.set(DFSConfigKeys.DFS_NAMENODE_RPC_ADDRESS_KEY, nn);
      dn.unset(DFSConfigKeys.DFS_NAMENODE_SERVICE_RPC_ADDRESS_KEY);
      dn.set("fs.defaultFS", "hdfs://" + nn);
      dn.set(DFSConfigKeys.DFS_DATANODE_ADDRESS_KEY, host + ":0");
      dn.set(DFSConfigKeys.DFS_DATANODE_HTTP_ADDRESS_KEY, host + ":0");
      dn.set(DFSConfigKeys.DFS_DATANODE_IPC_ADDRESS_KEY, host + ":0");
      cluster.startDataNodes(dn, 1, true, null, null, null, null, false, true);
    }
    cluster.waitActive();
    // A world-writable /tmp and a home for every user, as a fresh cluster's
    // admin would set up.
    org.apache.hadoop.fs.FileSystem fs = cluster.getFileSystem();
    fs.mkdirs(new org.apache.hadoop.fs.Path("/tmp"));
    fs.setPermission(new org.apache.hadoop.fs.Path("/tmp"), new org.apache.hadoop.fs.permission.FsPermission((short) 01777));
    fs.mkdirs(new org.apache.hadoop.fs.Path("/user"));
    fs.setPermission(new org.apache.hadoop.fs.Path("/user"), new org.apache.hadoop.fs.permission.FsPermission((short) 01777));
    System.out.println("READY hdfs://" + (host == null ? "127.0.0.1" : host) + ":" + cluster.getNameNodePort());
    System.out.flush();
    while (System.in.read() >= 0) {
      // runs until stdin closes
    }
    cluster.shutdown();
    System.exit(0);
  }
}
