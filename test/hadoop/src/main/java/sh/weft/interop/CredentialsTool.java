package sh.weft.interop;

import java.io.DataOutputStream;
import java.io.File;
import java.io.FileOutputStream;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.security.Credentials;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.security.token.TokenIdentifier;

/**
 * Hadoop's own Credentials on token storage files:
 * "write <writable-file> <protobuf-file>" writes a fixed set of tokens and
 * secrets in both encodings; "read <file>" reads any token storage file and
 * prints its entries as one JSON line (bytes in hex).
 */
public final class CredentialsTool {
  public static void main(String[] argv) throws Exception {
    if (argv[0].equals("write")) {
      Credentials c = new Credentials();
      c.addToken(new Text("rm-dt"), new Token<>("id-\u00e9\u0001".getBytes("UTF-8"), new byte[] {1, 2, 3},
          new Text("RM_DELEGATION_TOKEN"), new Text("127.0.0.1:8032")));
      byte[] big = new byte[300];
      for (int i = 0; i < big.length; i++) {
        big[i] = (byte) i;
      }
      c.addToken(new Text("hdfs"), new Token<>(big, new byte[0], new Text("HDFS_DELEGATION_TOKEN"), new Text("ha-hdfs:nn")));
      c.addSecretKey(new Text("mapreduce.job.shuffle"), new byte[] {(byte) 0xff, 0, 7});
      write(c, argv[1], Credentials.SerializedFormat.WRITABLE);
      write(c, argv[2], Credentials.SerializedFormat.PROTOBUF);
      return;
    }
    Credentials c = Credentials.readTokenStorageFile(new File(argv[1]), new Configuration());
    Map<String, Object> out = new LinkedHashMap<>();
    Map<String, String> tokens = new TreeMap<>();
    for (Text alias : c.getAllTokens().isEmpty() ? new java.util.ArrayList<Text>() : aliases(c)) {
      Token<? extends TokenIdentifier> t = c.getToken(alias);
      tokens.put(alias.toString(), hex(t.getIdentifier()) + "/" + hex(t.getPassword()) + "/" + t.getKind() + "/" + t.getService());
    }
    Map<String, String> secrets = new TreeMap<>();
    for (Text alias : c.getAllSecretKeys()) {
      secrets.put(alias.toString(), hex(c.getSecretKey(alias)));
    }
    out.put("tokens", tokens.toString());
    out.put("secrets", secrets.toString());
    System.out.println(Json.of(out));
  }

  private static java.util.List<Text> aliases(Credentials c) throws Exception {
    // Credentials exposes token aliases only through its map; copy them out.
    java.lang.reflect.Field f = Credentials.class.getDeclaredField("tokenMap");
    f.setAccessible(true);
    return new java.util.ArrayList<>(((Map<Text, ?>) f.get(c)).keySet());
  }

  private static void write(Credentials c, String path, Credentials.SerializedFormat format) throws Exception {
    try (DataOutputStream os = new DataOutputStream(new FileOutputStream(path))) {
      c.writeTokenStorageToStream(os, format);
    }
  }

  private static String hex(byte[] b) {
    StringBuilder s = new StringBuilder();
    for (byte x : b) {
      s.append(String.format("%02x", x & 0xff));
    }
    return s.toString();
  }
}
