package sh.weft.interop;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationReport;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.LocalResource;
import org.apache.hadoop.yarn.api.records.LocalResourceType;
import org.apache.hadoop.yarn.api.records.LocalResourceVisibility;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.URL;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.client.api.YarnClientApplication;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

/**
 * Creates and submits an application through YarnClient, as any YARN
 * application's client does, and prints its report as one JSON line.
 */
public final class SubmitApp {
  public static void main(String[] argv) throws Exception {
    Args a = new Args(argv);
    YarnClient yarn = YarnClient.createYarnClient();
    yarn.init(new YarnConfiguration());
    yarn.start();
    try {
      // --count N submits N applications one after another (a stream of
      // submissions), printing each one's line as it is acknowledged.
      // --stop-file F ends the stream early once F exists, between two
      // submissions, so that every submission started is also finished.
      int count = a.getInt("count", 1);
      java.io.File stop = new java.io.File(a.get("stop-file", "/nonexistent/stop"));
      for (int i = 0; i < count && !stop.exists(); i++) {
        submit(yarn, a);
        Thread.sleep(a.getInt("interval-ms", 0));
      }
    } finally {
      yarn.stop();
    }
  }

  private static void submit(YarnClient yarn, Args a) throws Exception {
    YarnClientApplication app = yarn.createApplication();
    ApplicationSubmissionContext ctx = app.getApplicationSubmissionContext();
    ctx.setApplicationName(a.get("name", "weft-interop"));
    ctx.setQueue(a.get("queue", "default"));
    ctx.setApplicationType(a.get("type", "YARN"));
    String tags = a.get("tags", "");
    if (!tags.isEmpty()) {
      ctx.setApplicationTags(new HashSet<>(Arrays.asList(tags.split(","))));
    }
    ctx.setResource(Resource.newInstance(a.getInt("am-memory", 1024), a.getInt("am-vcores", 1)));
    ctx.setPriority(Priority.newInstance(a.getInt("priority", 0)));
    // --unmanaged true: the client's own AM (none here), so the RM
    // launches nothing and the application waits in ACCEPTED.
    ctx.setUnmanagedAM(Boolean.parseBoolean(a.get("unmanaged", "false")));
    int maxAttempts = a.getInt("max-attempts", 0);
    if (maxAttempts > 0) {
      ctx.setMaxAppAttempts(maxAttempts);
    }
    List<String> commands = Collections.singletonList(a.get("command", "sleep 60"));
    // --resource PATH localizes a file of the default filesystem under
    // its base name, recorded as every YARN client records one: its
    // length and modification time now. --rewrite-after-record true then
    // writes it anew, as a user replacing a jar under a submitted job
    // would.
    Map<String, LocalResource> resources = new LinkedHashMap<>();
    String resource = a.get("resource", "");
    if (!resource.isEmpty()) {
      Configuration conf = new YarnConfiguration();
      Path p = new Path(resource);
      FileSystem fs = p.getFileSystem(conf);
      FileStatus st = fs.getFileStatus(p);
      resources.put(p.getName(), LocalResource.newInstance(URL.fromPath(fs.makeQualified(p)),
          LocalResourceType.valueOf(a.get("resource-type", "FILE")), LocalResourceVisibility.APPLICATION,
          st.getLen(), st.getModificationTime()));
      if (Boolean.parseBoolean(a.get("rewrite-after-record", "false"))) {
        Thread.sleep(10);
        try (FSDataOutputStream out = fs.create(p, true)) {
          out.write("rewritten\n".getBytes(StandardCharsets.UTF_8));
        }
      }
    }
    ctx.setAMContainerSpec(ContainerLaunchContext.newInstance(
        resources, Collections.emptyMap(), commands, null, null, null));
    // submitApplication returns once the RM reports the app past SUBMITTED.
    ApplicationId id = yarn.submitApplication(ctx);
    ApplicationReport r = yarn.getApplicationReport(id);
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("applicationId", id.toString());
    out.put("state", r.getYarnApplicationState().toString());
    out.put("finalStatus", r.getFinalApplicationStatus().toString());
    out.put("queue", r.getQueue());
    out.put("user", r.getUser());
    out.put("name", r.getName());
    out.put("type", r.getApplicationType());
    out.put("tags", r.getApplicationTags());
    out.put("priority", r.getPriority() == null ? null : r.getPriority().getPriority());
    out.put("attempt", r.getCurrentApplicationAttemptId() == null ? null : r.getCurrentApplicationAttemptId().toString());
    out.put("diagnostics", r.getDiagnostics());
    System.out.println(Json.of(out));
    System.out.flush();
  }
}
