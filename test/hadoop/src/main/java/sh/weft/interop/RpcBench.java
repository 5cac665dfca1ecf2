package sh.weft.interop;

import java.security.PrivilegedExceptionAction;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.client.api.YarnClientApplication;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

/**
 * Measures getApplicationReport throughput and latency with the Java
 * client. Each thread is its own user and so its own IPC connection, as
 * separate client processes are; within a thread calls are sequential.
 * Prints "WINDOW start" when the measured seconds begin (after the
 * warm-up) and "WINDOW end" when they end, so that a harness can read the
 * server's CPU over the same window, then one JSON line.
 */
public final class RpcBench {
  public static void main(String[] argv) throws Exception {
    Args a = new Args(argv);
    int threads = a.getInt("threads", 8);
    long warmupMs = a.getInt("warmup", 3) * 1000L;
    long runMs = a.getInt("seconds", 10) * 1000L;
    Configuration conf = new YarnConfiguration();

    YarnClient setup = YarnClient.createYarnClient();
    setup.init(conf);
    setup.start();
    YarnClientApplication app = setup.createApplication();
    app.getApplicationSubmissionContext().setApplicationName("rpc-bench");
    app.getApplicationSubmissionContext().setAMContainerSpec(
        org.apache.hadoop.yarn.api.records.ContainerLaunchContext.newInstance(null, null,
            java.util.Collections.singletonList("sleep 600"), null, null, null));
    app.getApplicationSubmissionContext().setResource(
        org.apache.hadoop.yarn.api.records.Resource.newInstance(1024, 1));
    ApplicationId id = setup.submitApplication(app.getApplicationSubmissionContext());

    long[][] samples = new long[threads][];
    int[] counts = new int[threads];
    CountDownLatch ready = new CountDownLatch(threads);
    AtomicReference<Throwable> failure = new AtomicReference<>();
    long start = System.nanoTime() + 500_000_000L; // all threads connected by then
    long measureFrom = start + warmupMs * 1_000_000L;
    long end = measureFrom + runMs * 1_000_000L;
    Thread[] ts = new Thread[threads];
    for (int t = 0; t < threads; t++) {
      final int n = t;
      samples[n] = new long[4_000_000];
      ts[t] = new Thread(() -> {
        try {
          UserGroupInformation.createRemoteUser("bench" + n).doAs((PrivilegedExceptionAction<Void>) () -> {
            YarnClient c = YarnClient.createYarnClient();
            c.init(conf);
            c.start();
            c.getApplicationReport(id);
            ready.countDown();
            while (System.nanoTime() < start) {
              Thread.onSpinWait();
            }
            long now;
            while ((now = System.nanoTime()) < end) {
              c.getApplicationReport(id);
              long after = System.nanoTime();
              if (now >= measureFrom && counts[n] < samples[n].length) {
                samples[n][counts[n]++] = after - now;
              }
            }
            c.stop();
            return null;
          });
        } catch (Throwable e) {
          failure.compareAndSet(null, e);
          ready.countDown();
        }
      });
      ts[t].start();
    }
    sleepUntil(measureFrom);
    System.out.println("WINDOW start");
    System.out.flush();
    sleepUntil(end);
    System.out.println("WINDOW end");
    System.out.flush();
    for (Thread t : ts) {
      t.join();
    }
    String state = setup.getApplicationReport(id).getYarnApplicationState().toString();
    setup.killApplication(id);
    setup.stop();
    if (failure.get() != null) {
      throw new RuntimeException(failure.get());
    }
    int total = 0;
    for (int c : counts) {
      total += c;
    }
    long[] all = new long[total];
    int k = 0;
    for (int t = 0; t < threads; t++) {
      System.arraycopy(samples[t], 0, all, k, counts[t]);
      k += counts[t];
    }
    Arrays.sort(all);
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("threads", threads);
    out.put("calls", total);
    out.put("appState", state); // what the server reported on
    out.put("seconds", runMs / 1000.0);
    out.put("callsPerSec", total / (runMs / 1000.0));
    out.put("p50Micros", pct(all, 0.50));
    out.put("p99Micros", pct(all, 0.99));
    out.put("p999Micros", pct(all, 0.999));
    System.out.println(Json.of(out));
  }

  private static void sleepUntil(long nanoTime) throws InterruptedException {
    long left;
    while ((left = nanoTime - System.nanoTime()) > 0) {
      Thread.sleep(left / 1_000_000, (int) (left % 1_000_000));
    }
  }

  private static double pct(long[] sorted, double q) {
    if (sorted.length == 0) {
      return 0;
    }
    return sorted[Math.min(sorted.length - 1, (int) (q * sorted.length))] / 1000.0;
  }
}
