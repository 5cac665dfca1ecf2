package sh.weft.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * Estimates pi by throwing darts, as Spark's SparkPi example does, and
 * prints the same line: "Pi is roughly 3.14...". Usage: SparkPi [slices]
 * [pauseMs]: each slice's task first sleeps pauseMs (default 0), so a test
 * can act while the executors run.
 */
public final class SparkPi {
  private SparkPi() {}

  public static void main(String[] args) {
    int slices = args.length > 0 ? Integer.parseInt(args[0]) : 2;
    long pauseMs = args.length > 1 ? Long.parseLong(args[1]) : 0;
    int n = (int) Math.min(100000L * slices, Integer.MAX_VALUE);
    try (JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("Spark Pi"))) {
      List<Integer> darts = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        darts.add(i);
      }
      JavaRDD<Integer> rdd = sc.parallelize(darts, slices);
      if (pauseMs > 0) {
        rdd = rdd.mapPartitions(it -> {
          Thread.sleep(pauseMs);
          return it;
        });
      }
      int inside = rdd.map(i -> {
        double x = ThreadLocalRandom.current().nextDouble() * 2 - 1;
        double y = ThreadLocalRandom.current().nextDouble() * 2 - 1;
        return x * x + y * y <= 1 ? 1 : 0;
      }).reduce(Integer::sum);
      System.out.println("Pi is roughly " + 4.0 * inside / n);
    }
  }
}
