package sh.weft.spark;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.apache.spark.HashPartitioner;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.util.CollectionAccumulator;

import scala.Tuple2;

/**
 * A shuffle-heavy job for executors that go while their map outputs are
 * still needed: a first job shuffles generated records and remembers which
 * executors wrote the map outputs; the driver then waits, up to waitMs,
 * until all of those executors are gone (mode "all": dynamic allocation
 * releases idle ones) or any of them (mode "any": a node taken back), and
 * a second job reads the same shuffle's blocks again, re-shuffles them and
 * sums them. Unless the outputs outlive their executors (the node's
 * external shuffle service, or blocks migrated on decommissioning), the
 * second job runs map tasks again. Usage: ShuffleStages [records]
 * [partitions] [waitMs] [all|any]. Prints "ShuffleStages first=N
 * writers=[..] alive=[..]" before the second job and "ShuffleStages sum=S
 * expected=E mapRuns=R" at the end, R the map tasks run in all (partitions
 * when none ran again).
 */
public final class ShuffleStages {
  private ShuffleStages() {}

  public static void main(String[] args) throws InterruptedException {
    int records = args.length > 0 ? Integer.parseInt(args[0]) : 200000;
    int partitions = args.length > 1 ? Integer.parseInt(args[1]) : 6;
    long waitMs = args.length > 2 ? Long.parseLong(args[2]) : 120000;
    boolean any = args.length > 3 && args[3].equals("any");
    int keys = 1000;
    try (JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("Shuffle Stages"))) {
      CollectionAccumulator<String> writers = sc.sc().collectionAccumulator("writers");
      List<Integer> slices = new ArrayList<>();
      for (int i = 0; i < partitions; i++) {
        slices.add(i);
      }
      int perSlice = records / partitions;
      // Each record is a key and a 100-character value whose first
      // characters are its number, so the sum is known in advance.
      JavaPairRDD<Integer, String> shuffled = sc.parallelize(slices, partitions).flatMapToPair(slice -> {
        writers.add(SparkEnv.get().executorId());
        List<Tuple2<Integer, String>> out = new ArrayList<>(perSlice);
        for (int i = 0; i < perSlice; i++) {
          int n = slice * perSlice + i;
          StringBuilder v = new StringBuilder(Integer.toString(n)).append(':');
          while (v.length() < 100) {
            v.append('x');
          }
          out.add(new Tuple2<>(n % keys, v.toString()));
        }
        return out.iterator();
      }).partitionBy(new HashPartitioner(partitions));
      long first = shuffled.count();

      Set<String> wrote = new HashSet<>(writers.value());
      System.out.println("ShuffleStages first=" + first + " writers=" + wrote + " waiting");
      long until = System.currentTimeMillis() + waitMs;
      Set<String> alive = alive(sc);
      while ((any ? alive.containsAll(wrote) : !disjoint(wrote, alive)) && System.currentTimeMillis() < until) {
        Thread.sleep(500);
        alive = alive(sc);
      }
      System.out.println("ShuffleStages first=" + first + " writers=" + wrote + " alive=" + alive);

      // The map stage's outputs are reused, not recomputed: this job's
      // tasks fetch them from wherever they were written.
      long sum = shuffled.mapToPair(kv -> new Tuple2<>(kv._1() % 7, Long.parseLong(kv._2().substring(0, kv._2().indexOf(':')))))
          .reduceByKey(Long::sum, 3).values().reduce(Long::sum);
      long n = (long) perSlice * partitions;
      System.out.println("ShuffleStages sum=" + sum + " expected=" + (n * (n - 1) / 2) + " mapRuns=" + writers.value().size());
    }
  }

  private static Set<String> alive(JavaSparkContext sc) {
    Set<String> ids = new HashSet<>(scala.collection.JavaConverters.seqAsJavaList(sc.sc().getExecutorIds()));
    ids.remove("driver");
    return ids;
  }

  private static boolean disjoint(Set<String> a, Set<String> b) {
    for (String s : a) {
      if (b.contains(s)) {
        return false;
      }
    }
    return true;
  }
}
