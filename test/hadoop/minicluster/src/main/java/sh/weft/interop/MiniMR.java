package sh.weft.interop;

import java.io.File;
import java.io.FileOutputStream;
import java.io.OutputStream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.v2.MiniMRYarnCluster;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

/**
 * Runs a real YARN cluster for MapReduce (MiniMRYarnCluster: a
 * ResourceManager, one NodeManager with the ShuffleHandler, a
 * JobHistoryServer) on loopback over an existing HDFS, writes the clients'
 * configuration into a HADOOP_CONF_DIR, prints "READY <conf dir>", and runs
 * until its standard input closes. Usage: MiniMR DEFAULT_FS CONF_DIR.
 */
public final class MiniMR {
  public static void main(String[] argv) throws Exception {
    Configuration conf = new YarnConfiguration();
    conf.set("fs.defaultFS", argv[0]);
    conf.set(YarnConfiguration.RM_HOSTNAME, "127.0.0.1");
    conf.set(YarnConfiguration.RM_BIND_HOST, "127.0.0.1");
    conf.set(YarnConfiguration.NM_BIND_HOST, "127.0.0.1");
    conf.setBoolean(YarnConfiguration.YARN_MINICLUSTER_FIXED_PORTS, false);
    MiniMRYarnCluster cluster = new MiniMRYarnCluster("weft-peer-mr", 1);
    cluster.init(conf);
    cluster.start();
    File dir = new File(argv[1]);
    dir.mkdirs();
    // The whole effective configuration, as Hadoop's own MR tests hand it
    // to their clients; each site file, so whichever loads first has it.
    for (String site : new String[] {"core-site.xml", "yarn-site.xml", "mapred-site.xml"}) {
      try (OutputStream out = new FileOutputStream(new File(dir, site))) {
        cluster.getConfig().writeXml(out);
      }
    }
    System.out.println("READY " + dir.getAbsolutePath());
    System.out.flush();
    while (System.in.read() >= 0) {
      // runs until stdin closes
    }
    cluster.stop();
    System.exit(0);
  }
}
