package sh.weft.interop;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

/**
 * Runs a real ResourceManager (MiniYARNCluster, one NodeManager) on
 * loopback, prints "READY <client address> <scheduler address> <web
 * address>", and runs until its standard input closes.
 */
public final class MiniRM {
  public static void main(String[] argv) throws Exception {
    Configuration conf = new YarnConfiguration();
    conf.set(YarnConfiguration.RM_HOSTNAME, "127.0.0.1");
    conf.set(YarnConfiguration.RM_BIND_HOST, "127.0.0.1");
    conf.set(YarnConfiguration.NM_BIND_HOST, "127.0.0.1");
    conf.setBoolean(YarnConfiguration.YARN_MINICLUSTER_FIXED_PORTS, false);
    MiniYARNCluster cluster = new MiniYARNCluster("weft-peer", 1, 1, 1);
    cluster.init(conf);
    cluster.start();
    Configuration rm = cluster.getConfig();
    System.out.println("READY " + rm.get(YarnConfiguration.RM_ADDRESS) + " " + rm.get(YarnConfiguration.RM_SCHEDULER_ADDRESS)
        + " " + rm.get(YarnConfiguration.RM_WEBAPP_ADDRESS));
    System.out.flush();
    while (System.in.read() >= 0) {
      // runs until stdin closes
    }
    cluster.stop();
    System.exit(0);
  }
}
