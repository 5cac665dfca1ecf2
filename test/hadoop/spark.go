package hadoop

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// SparkVersion is the Spark release compatibility is proven against: the
// newest 3.5 in the Maven repository.
const SparkVersion = "3.5.5"

// Spark is a Spark installation laid out from the pinned release's jars
// (SPARK_HOME/jars, as a binary distribution has them) and the harness's
// applications.
type Spark struct {
	Home string
	// AppJar holds the applications Weft's tests submit (SparkPi).
	AppJar string
}

// SparkRoot is the directory every Spark home SparkDist lays out is under:
// a node that mounts it has Spark's jars wherever a later build puts them
// (spark.yarn.jars=local:...).
func SparkRoot() string { return filepath.Join(cacheRoot(), "spark") }

// SparkDist builds (once per source hash) the Spark harness and lays out
// its home.
func SparkDist(ctx context.Context) (*Spark, error) {
	d, err := build(ctx, filepath.Join(sourceDir(), "spark"), "weft-spark-1.jar", SparkVersion)
	if err != nil {
		return nil, err
	}
	jars := filepath.SplitList(d.Classpath)
	h := sha256.Sum256([]byte(d.Classpath))
	home := filepath.Join(SparkRoot(), "home-"+SparkVersion+"-"+hex.EncodeToString(h[:6]))
	s := &Spark{Home: home, AppJar: jars[0]}
	done := filepath.Join(home, ".complete")
	if _, err := os.Stat(done); err == nil {
		return s, nil
	}
	dir := filepath.Join(home, "jars")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// conf/ as the distribution's log4j2.properties.template has it:
	// INFO to the console, so spark-submit reports the application.
	if err := os.MkdirAll(filepath.Join(home, "conf"), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(home, "conf", "log4j2.properties"), []byte(sparkLog4j), 0o644); err != nil {
		return nil, err
	}
	for _, p := range jars[1:] {
		if err := linkOrCopy(p, filepath.Join(dir, filepath.Base(p))); err != nil {
			return nil, err
		}
	}
	return s, os.WriteFile(done, nil, 0o644)
}

// linkOrCopy hard-links src to dst (copying across filesystems), unless
// dst exists.
func linkOrCopy(src, dst string) error {
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

const sparkLog4j = `rootLogger.level = info
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
`

// sparkJVMFlags are the module options Spark's launcher adds on Java 17
// (JavaModuleOptions).
var sparkJVMFlags = []string{
	"-Xmx512m", "-XX:+IgnoreUnrecognizedVMOptions", "-Djava.net.preferIPv4Stack=true", "-Djdk.reflect.useDirectMethodHandle=false",
	"--add-opens=java.base/java.lang=ALL-UNNAMED", "--add-opens=java.base/java.lang.invoke=ALL-UNNAMED",
	"--add-opens=java.base/java.lang.reflect=ALL-UNNAMED", "--add-opens=java.base/java.io=ALL-UNNAMED",
	"--add-opens=java.base/java.net=ALL-UNNAMED", "--add-opens=java.base/java.nio=ALL-UNNAMED",
	"--add-opens=java.base/java.util=ALL-UNNAMED", "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
	"--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED", "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
	"--add-opens=java.base/sun.nio.ch=ALL-UNNAMED", "--add-opens=java.base/sun.nio.cs=ALL-UNNAMED",
	"--add-opens=java.base/sun.security.action=ALL-UNNAMED", "--add-opens=java.base/sun.util.calendar=ALL-UNNAMED",
}

// Submit returns `spark-submit args...` as Spark's scripts run it: the
// launcher's java command with SPARK_HOME/jars and HADOOP_CONF_DIR on the
// class path, acting as user.
func (s *Spark) Submit(ctx context.Context, confDir, user string, args ...string) *exec.Cmd {
	cp := strings.Join([]string{filepath.Join(s.Home, "conf"), filepath.Join(s.Home, "jars", "*"), confDir}, string(os.PathListSeparator))
	argv := append(append([]string{}, sparkJVMFlags...), "-cp", cp, "org.apache.spark.deploy.SparkSubmit")
	cmd := exec.CommandContext(ctx, "java", append(argv, args...)...)
	cmd.Env = append(os.Environ(), "SPARK_HOME="+s.Home, "SPARK_CONF_DIR="+filepath.Join(s.Home, "conf"), "HADOOP_CONF_DIR="+confDir, "HADOOP_USER_NAME="+user, "SPARK_USER="+user)
	return cmd
}

// String names the installation in messages.
func (s *Spark) String() string { return fmt.Sprintf("Spark %s at %s", SparkVersion, s.Home) }

// SparkShuffleClass is Spark's external shuffle service for YARN, the
// class a NodeManager's yarn.nodemanager.aux-services.spark_shuffle.class
// names.
const SparkShuffleClass = "org.apache.spark.network.yarn.YarnShuffleService"

// SparkShuffleClasspath lays out (once per source hash) the pinned
// release's shuffle service with the libraries its distribution jar
// shades in, under SparkRoot, and returns its class path (dir/*): what a
// node's yarn.nodemanager.aux-services.spark_shuffle.classpath names.
func SparkShuffleClasspath(ctx context.Context) (string, error) {
	d, err := build(ctx, filepath.Join(sourceDir(), "sparkshuffle"), "weft-spark-shuffle-1.jar", SparkVersion)
	if err != nil {
		return "", err
	}
	jars := filepath.SplitList(d.Classpath)[1:] // the project's own jar is empty
	h := sha256.Sum256([]byte(d.Classpath))
	dir := filepath.Join(SparkRoot(), "yarn-shuffle-"+SparkVersion+"-"+hex.EncodeToString(h[:6]))
	cp := filepath.Join(dir, "*")
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err == nil {
		return cp, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, p := range jars {
		if err := linkOrCopy(p, filepath.Join(dir, filepath.Base(p))); err != nil {
			return "", err
		}
	}
	return cp, os.WriteFile(filepath.Join(dir, ".complete"), nil, 0o644)
}
