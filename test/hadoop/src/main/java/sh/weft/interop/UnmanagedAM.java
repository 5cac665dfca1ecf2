package sh.weft.interop;

import java.security.PrivilegedExceptionAction;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.security.token.TokenIdentifier;
import org.apache.hadoop.yarn.api.protocolrecords.AllocateResponse;
import org.apache.hadoop.yarn.api.protocolrecords.RegisterApplicationMasterResponse;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationReport;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.FinalApplicationStatus;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.client.ClientRMProxy;
import org.apache.hadoop.yarn.client.api.AMRMClient;
import org.apache.hadoop.yarn.client.api.AMRMClient.ContainerRequest;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.client.api.YarnClientApplication;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.util.ConverterUtils;

/**
 * Plays an unmanaged ApplicationMaster with Hadoop's own AMRMClient:
 * submits an application with unmanagedAM=true, takes the AMRMToken from
 * its report (as UnmanagedAMLauncher does), registers, heartbeats and
 * unregisters; then tries a forged token and the token of the finished
 * attempt. Prints one JSON line.
 */
public final class UnmanagedAM {
  public static void main(String[] argv) throws Exception {
    Args a = new Args(argv);
    Configuration conf = new YarnConfiguration();
    conf.setLong(YarnConfiguration.RESOURCEMANAGER_CONNECT_MAX_WAIT_MS, 2000);
    conf.setLong(YarnConfiguration.RESOURCEMANAGER_CONNECT_RETRY_INTERVAL_MS, 500);
    YarnClient yarn = YarnClient.createYarnClient();
    yarn.init(conf);
    yarn.start();
    Map<String, Object> out = new LinkedHashMap<>();
    try {
      YarnClientApplication app = yarn.createApplication();
      ApplicationSubmissionContext ctx = app.getApplicationSubmissionContext();
      ctx.setApplicationName(a.get("name", "unmanaged-am"));
      ctx.setUnmanagedAM(true);
      ctx.setResource(Resource.newInstance(1024, 1));
      ctx.setAMContainerSpec(ContainerLaunchContext.newInstance(null, null, Collections.emptyList(), null, null, null));
      ApplicationId id = yarn.submitApplication(ctx);
      out.put("applicationId", id.toString());

      Token<TokenIdentifier> token = null;
      for (int i = 0; i < 100 && token == null; i++) {
        ApplicationReport r = yarn.getApplicationReport(id);
        if (r.getAMRMToken() != null) {
          token = ConverterUtils.convertFromYarn(r.getAMRMToken(), ClientRMProxy.getAMRMTokenService(conf));
        } else {
          Thread.sleep(100);
        }
      }
      if (token == null) {
        throw new IllegalStateException("no AMRMToken in the application report");
      }
      out.put("tokenKind", token.getKind().toString());
      final Token<TokenIdentifier> amToken = token;
      String attempt = yarn.getApplicationReport(id).getCurrentApplicationAttemptId().toString();

      UserGroupInformation am = UserGroupInformation.createRemoteUser(attempt);
      am.addToken(amToken);
      FinalApplicationStatus finalStatus = FinalApplicationStatus.valueOf(a.get("final", "SUCCEEDED"));
      int heartbeats = a.getInt("heartbeats", 3);
      am.doAs((PrivilegedExceptionAction<Void>) () -> {
        AMRMClient<ContainerRequest> rm = AMRMClient.createAMRMClient();
        rm.init(conf);
        rm.start();
        RegisterApplicationMasterResponse reg = rm.registerApplicationMaster("127.0.0.1", 4242, "http://127.0.0.1:4243/am");
        out.put("registeredQueue", reg.getQueue());
        out.put("maxMemoryMB", reg.getMaximumResourceCapability().getMemorySize());
        out.put("stateWhileRegistered", yarn.getApplicationReport(id).getYarnApplicationState().toString());
        int nodes = -1;
        for (int i = 0; i < heartbeats; i++) {
          AllocateResponse resp = rm.allocate(0.1f * (i + 1));
          nodes = resp.getNumClusterNodes();
        }
        out.put("heartbeats", heartbeats);
        out.put("clusterNodes", nodes);
        // While the attempt is live: the same identifier with a forged password.
        byte[] bad = amToken.getPassword().clone();
        for (int i = 0; i < bad.length; i++) {
          bad[i] ^= 0x33;
        }
        out.put("forgedToken", registerWith(conf, attempt,
            new Token<>(amToken.getIdentifier(), bad, amToken.getKind(), amToken.getService())));
        rm.unregisterApplicationMaster(finalStatus, "unregistered by the probe", "http://127.0.0.1:4243/history");
        rm.stop();
        return null;
      });
      ApplicationReport done = yarn.getApplicationReport(id);
      out.put("state", done.getYarnApplicationState().toString());
      out.put("finalStatus", done.getFinalApplicationStatus().toString());
      out.put("diagnostics", done.getDiagnostics());
      out.put("amHost", done.getHost());

      out.put("finishedAttemptToken", registerWith(conf, attempt, amToken));
    } finally {
      yarn.stop();
    }
    System.out.println(Json.of(out));
  }

  /** Tries to register as an AM holding token; returns "ok" or the root exception. */
  private static String registerWith(Configuration conf, String user, Token<TokenIdentifier> token) throws Exception {
    UserGroupInformation ugi = UserGroupInformation.createRemoteUser(user);
    ugi.addToken(token);
    return ugi.doAs((PrivilegedExceptionAction<String>) () -> {
      AMRMClient<ContainerRequest> rm = AMRMClient.createAMRMClient();
      rm.init(conf);
      rm.start();
      try {
        rm.registerApplicationMaster("127.0.0.1", 1, "");
        return "ok";
      } catch (Exception e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
          root = root.getCause();
        }
        return root.getClass().getName() + ": " + root.getMessage();
      } finally {
        rm.stop();
      }
    });
  }
}
