// AuxServiceHost runs YARN auxiliary services (a NodeManager's
// yarn.nodemanager.aux-services) for Weft's node plugin, which is not a JVM:
// it loads each service's class as a NodeManager does, in a class loader of
// its own over the service's class path (Hadoop's classes from the node's
// installation, the rest from the service's jars first), gives it its
// recovery path, init()s and start()s it, then feeds it the application
// and container events the plugin sends on stdin, one request a line:
//
//   initApp <service> <application> <user> <base64 service data>
//   stopApp <application>
//   initContainer <container> <user>
//   stopContainer <container> <user>
//   meta
//
// and answers each on stdout with "ok [<base64>]" or
// "err <exception class> <base64 message>". The plugin runs this file with
// Java's source launcher (java -cp <Hadoop> AuxServiceHost.java ...).
//
// Arguments: --service <name>=<class>=<class path> (repeated),
// --recovery <dir> (each service's recovery path is <dir>/<name>, as under
// yarn.nodemanager.recovery.dir/nm-aux-services), --conf <key>=<value>
// (repeated: the services' Configuration).

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.server.api.ApplicationInitializationContext;
import org.apache.hadoop.yarn.server.api.ApplicationTerminationContext;
import org.apache.hadoop.yarn.server.api.AuxiliaryService;
import org.apache.hadoop.yarn.server.api.ContainerInitializationContext;
import org.apache.hadoop.yarn.server.api.ContainerTerminationContext;

public class AuxServiceHost {
  public static void main(String[] args) throws Exception {
    // The protocol owns stdout; anything a service prints goes to stderr.
    PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
    System.setOut(System.err);

    Configuration conf = new Configuration();
    Map<String, String[]> specs = new LinkedHashMap<>();
    String recovery = null;
    for (int i = 0; i + 1 < args.length; i += 2) {
      String v = args[i + 1];
      switch (args[i]) {
        case "--service": {
          String[] p = v.split("=", 3);
          if (p.length != 3) {
            throw new IllegalArgumentException("--service wants <name>=<class>=<class path>: " + v);
          }
          specs.put(p[0], p);
          break;
        }
        case "--recovery":
          recovery = v;
          break;
        case "--conf": {
          String[] p = v.split("=", 2);
          conf.set(p[0], p.length > 1 ? p[1] : "");
          break;
        }
        default:
          throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }

    Map<String, AuxiliaryService> services = new LinkedHashMap<>();
    for (String[] p : specs.values()) {
      ClassLoader loader = new ServiceClassLoader(urls(p[2]), AuxServiceHost.class.getClassLoader());
      Thread.currentThread().setContextClassLoader(loader);
      AuxiliaryService s = (AuxiliaryService) Class.forName(p[1], true, loader).getDeclaredConstructor().newInstance();
      if (recovery != null) {
        File dir = new File(recovery, p[0]);
        dir.mkdirs();
        s.setRecoveryPath(new Path(dir.toURI()));
      }
      s.init(conf);
      s.start();
      services.put(p[0], s);
      System.err.println("AuxServiceHost: started " + p[0] + " (" + p[1] + ")");
    }
    out.println("ready");

    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      try {
        out.println(handle(services, line.split(" ", -1)));
      } catch (Throwable t) {
        Throwable c = t.getCause() != null && t instanceof java.lang.reflect.InvocationTargetException ? t.getCause() : t;
        String msg = String.valueOf(c.getMessage());
        out.println("err " + c.getClass().getName() + " " + Base64.getEncoder().encodeToString(msg.getBytes(StandardCharsets.UTF_8)));
      }
    }
    // stdin closed: the plugin is gone or stopping.
    for (AuxiliaryService s : services.values()) {
      s.stop();
    }
  }

  static String handle(Map<String, AuxiliaryService> services, String[] f) throws Exception {
    switch (f[0]) {
      case "initApp": {
        AuxiliaryService s = services.get(f[1]);
        if (s == null) {
          throw new IllegalArgumentException("The auxService:" + f[1] + " does not exist");
        }
        ByteBuffer data = ByteBuffer.wrap(Base64.getDecoder().decode(f[4]));
        s.initializeApplication(new ApplicationInitializationContext(f[3], ApplicationId.fromString(f[2]), data));
        return "ok";
      }
      case "stopApp":
        // A NodeManager tells every service an application ended.
        for (AuxiliaryService s : services.values()) {
          s.stopApplication(new ApplicationTerminationContext(ApplicationId.fromString(f[1])));
        }
        return "ok";
      case "initContainer":
        for (AuxiliaryService s : services.values()) {
          s.initializeContainer(new ContainerInitializationContext(f[2], ContainerId.fromString(f[1]), null));
        }
        return "ok";
      case "stopContainer":
        for (AuxiliaryService s : services.values()) {
          s.stopContainer(new ContainerTerminationContext(f[2], ContainerId.fromString(f[1]), null));
        }
        return "ok";
      case "meta": {
        // name=base64 pairs, as StartContainers' services_meta_data.
        StringBuilder b = new StringBuilder("ok");
        for (Map.Entry<String, AuxiliaryService> e : services.entrySet()) {
          ByteBuffer m = e.getValue().getMetaData();
          byte[] bytes = new byte[m == null ? 0 : m.remaining()];
          if (m != null) {
            m.duplicate().get(bytes);
          }
          b.append(' ').append(e.getKey()).append('=').append(Base64.getEncoder().encodeToString(bytes));
        }
        return b.toString();
      }
      default:
        throw new IllegalArgumentException("unknown request " + f[0]);
    }
  }

  static URL[] urls(String classpath) throws MalformedURLException {
    List<URL> urls = new ArrayList<>();
    for (String e : classpath.split(File.pathSeparator)) {
      if (e.isEmpty()) {
        continue;
      }
      if (e.endsWith("/*")) {
        File[] jars = new File(e.substring(0, e.length() - 2)).listFiles((d, n) -> n.endsWith(".jar"));
        if (jars != null) {
          java.util.Arrays.sort(jars);
          for (File j : jars) {
            urls.add(j.toURI().toURL());
          }
        }
        continue;
      }
      urls.add(new File(e).toURI().toURL());
    }
    return urls.toArray(new URL[0]);
  }

  // ServiceClassLoader is Hadoop's ApplicationClassLoader in spirit: the
  // JDK, Hadoop and the logging APIs come from the host (so the service
  // and the host share AuxiliaryService and Configuration), everything
  // else from the service's own jars first, so its libraries (Netty,
  // Jackson, ...) do not meet the node's Hadoop's versions of them.
  static final class ServiceClassLoader extends URLClassLoader {
    private static final String[] SYSTEM = {
      "java.", "javax.", "jdk.", "sun.", "com.sun.", "org.w3c.dom.", "org.xml.sax.",
      "org.apache.hadoop.", "org.slf4j.", "org.apache.log4j.", "org.apache.commons.logging.",
    };

    ServiceClassLoader(URL[] urls, ClassLoader parent) {
      super(urls, parent);
    }

    private static boolean system(String name) {
      for (String p : SYSTEM) {
        if (name.startsWith(p)) {
          return true;
        }
      }
      return false;
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
      synchronized (getClassLoadingLock(name)) {
        Class<?> c = findLoadedClass(name);
        if (c == null && !system(name)) {
          try {
            c = findClass(name);
          } catch (ClassNotFoundException e) {
            // Not the service's: the host's.
          }
        }
        if (c == null) {
          c = getParent().loadClass(name);
        }
        if (resolve) {
          resolveClass(c);
        }
        return c;
      }
    }

    @Override
    public URL getResource(String name) {
      URL u = findResource(name);
      return u != null ? u : super.getResource(name);
    }
  }
}
