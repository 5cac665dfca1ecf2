package sh.weft.interop;

import java.security.PrivilegedExceptionAction;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.security.token.TokenIdentifier;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.client.ClientRMProxy;
import org.apache.hadoop.yarn.client.api.YarnClientApplication;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.util.ConverterUtils;

/**
 * Obtains an RM delegation token, then calls the RM as a user holding only
 * that token (Hadoop clients switch to SASL TOKEN auth when their UGI
 * holds a matching token): once with the real token, once with its
 * password corrupted. Prints the outcomes as one JSON line.
 */
public final class TokenProbe {
  public static void main(String[] argv) throws Exception {
    Configuration conf = new YarnConfiguration();
    // Fail fast instead of retrying for minutes on connection trouble.
    conf.setLong(YarnConfiguration.RESOURCEMANAGER_CONNECT_MAX_WAIT_MS, 2000);
    conf.setLong(YarnConfiguration.RESOURCEMANAGER_CONNECT_RETRY_INTERVAL_MS, 500);
    YarnClient yarn = YarnClient.createYarnClient();
    yarn.init(conf);
    yarn.start();
    Token<TokenIdentifier> token;
    try {
      org.apache.hadoop.yarn.api.records.Token t = yarn.getRMDelegationToken(new Text("yarn"));
      token = ConverterUtils.convertFromYarn(t, ClientRMProxy.getRMDelegationTokenService(conf));
    } finally {
      yarn.stop();
    }
    byte[] bad = token.getPassword().clone();
    for (int i = 0; i < bad.length; i++) {
      bad[i] ^= 0x5a;
    }
    Token<TokenIdentifier> forged = new Token<>(token.getIdentifier(), bad, token.getKind(), token.getService());

    Map<String, Object> out = new LinkedHashMap<>();
    out.put("tokenKind", token.getKind().toString());
    out.put("tokenService", token.getService().toString());
    out.put("goodToken", callWith("tokenuser", token, conf, true));
    out.put("badToken", callWith("forger", forged, conf, false));
    System.out.println(Json.of(out));
  }

  /**
   * Calls the RM as user holding only token. With submit, it submits an
   * application and reports the user the RM recorded for it: the token's
   * owner if the call was authenticated by the token, not the UGI's name.
   */
  private static String callWith(String user, Token<TokenIdentifier> token, Configuration conf, boolean submit)
      throws Exception {
    UserGroupInformation ugi = UserGroupInformation.createRemoteUser(user);
    ugi.addToken(token);
    return ugi.doAs((PrivilegedExceptionAction<String>) () -> {
      YarnClient c = YarnClient.createYarnClient();
      c.init(conf);
      c.start();
      try {
        if (!submit) {
          return "ok:" + c.getApplications().size();
        }
        YarnClientApplication app = c.createApplication();
        ApplicationSubmissionContext ctx = app.getApplicationSubmissionContext();
        ctx.setApplicationName("token-probe");
        ctx.setResource(Resource.newInstance(1024, 1));
        ctx.setAMContainerSpec(ContainerLaunchContext.newInstance(null, null, Collections.singletonList("true"), null, null, null));
        ApplicationId id = c.submitApplication(ctx);
        return "ok:user=" + c.getApplicationReport(id).getUser();
      } catch (Exception e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
          root = root.getCause();
        }
        return root.getClass().getName() + ": " + root.getMessage();
      } finally {
        c.stop();
      }
    });
  }
}
