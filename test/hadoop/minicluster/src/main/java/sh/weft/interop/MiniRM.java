package sh.weft.interop;

import java.io.File;
import java.io.FileOutputStream;
import java.io.OutputStream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

/**
 * Runs a real ResourceManager (MiniYARNCluster, one NodeManager) on
 * loopback, writes the yarn-site.xml its clients need into the directory
 * given as the first argument, prints "READY <rm address>", and runs until
 * its standard input closes.
 */
public final class MiniRM {
  public static void main(String[] argv) throws Exception {
    File confDir = new File(argv[0]);
    confDir.mkdirs();
    Configuration conf = new YarnConfiguration();
    conf.set(YarnConfiguration.RM_HOSTNAME, "127.0.0.1");
    conf.set(YarnConfiguration.RM_BIND_HOST, "127.0.0.1");
    conf.set(YarnConfiguration.NM_BIND_HOST, "127.0.0.1");
    conf.setBoolean(YarnConfiguration.YARN_MINICLUSTER_FIXED_PORTS, false);
    conf.setBoolean(YarnConfiguration.YARN_MINICLUSTER_USE_RPC, true);
    MiniYARNCluster cluster = new MiniYARNCluster("weft-peer", 1, 1, 1);
    cluster.init(conf);
    cluster.start();
    Configuration rmConf = cluster.getConfig();
    Configuration out = new Configuration(false);
    for (String key : new String[] {YarnConfiguration.RM_ADDRESS, YarnConfiguration.RM_SCHEDULER_ADDRESS,
        YarnConfiguration.RM_WEBAPP_ADDRESS}) {
      out.set(key, rmConf.get(key));
    }
    try (OutputStream os = new FileOutputStream(new File(confDir, "yarn-site.xml"))) {
      out.writeXml(os);
    }
    System.out.println("READY " + rmConf.get(YarnConfiguration.RM_ADDRESS));
    System.out.flush();
    while (System.in.read() >= 0) {
      // runs until stdin closes
    }
    cluster.stop();
    System.exit(0);
  }
}
