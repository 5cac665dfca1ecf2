// Package hadoop runs real Apache Hadoop clients — the `yarn` CLI classes
// and small programs written against Hadoop's public API — from pinned
// releases fetched with Maven, for Weft's compatibility tests.
package hadoop

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
)

// Versions are the Hadoop releases compatibility is proven against.
var Versions = []string{"3.3.6", "3.4.1"}

// Dist is one Hadoop release's client classpath plus Weft's harness jar.
type Dist struct {
	Version   string
	Classpath string
	// JVM chooses the flags its java commands start with: TestJVM (the
	// zero value) or DaemonJVM.
	JVM JVMProfile
	// JVMArgs go after the profile's flags, so they may override them
	// (-Xmx).
	JVMArgs []string
}

// JVMProfile is the set of JVM flags a Dist's java commands start with.
type JVMProfile int

const (
	// TestJVM adds testJVMFlags to javaFlags: a small heap, the serial
	// collector and the C1 compiler only, so that the many short-lived
	// JVMs of the tests (a yarn CLI per step, MiniDFS, AMs) start quickly
	// and stay small on a two-core machine. The default.
	TestJVM JVMProfile = iota
	// DaemonJVM is javaFlags alone: what Hadoop's launch scripts give a
	// daemon whose operator sets nothing in yarn-env.sh/hadoop-env.sh. The
	// yarn script adds -Xmx only when YARN_RESOURCEMANAGER_HEAPSIZE (or
	// HADOOP_HEAPSIZE_MAX, its default) is set, and no GC or JIT flag at
	// all (hadoop-functions.sh, hadoop_finalize_hadoop_heap; yarn-env.sh:
	// "Default is the same as HADOOP_HEAPSIZE_MAX", which hadoop-env.sh
	// leaves unset so the JVM sizes the heap from the machine's memory). So
	// the JVM picks its own heap (a quarter of memory), collector (G1 on a
	// machine of two or more CPUs and 2 GB) and tiered C1+C2 compilation,
	// as it does for a ResourceManager deployed with defaults.
	DaemonJVM
)

// sourceDir is this package's directory, where the Maven projects live.
func sourceDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// cacheRoot is where builds are kept between runs ($WEFT_CACHE or
// ~/.cache/weft).
func cacheRoot() string {
	if d := os.Getenv("WEFT_CACHE"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "weft-cache")
	}
	return filepath.Join(home, ".cache", "weft")
}

// Client builds (once per version and source hash) the harness against
// the Hadoop client libraries.
func Client(ctx context.Context, version string) (*Dist, error) {
	return build(ctx, filepath.Join(sourceDir()), "weft-interop-1.jar", version)
}

// MiniCluster builds the MiniYARNCluster launcher, whose classpath holds a
// whole real ResourceManager.
func MiniCluster(ctx context.Context, version string) (*Dist, error) {
	return build(ctx, filepath.Join(sourceDir(), "minicluster"), "weft-minicluster-1.jar", version)
}

func build(ctx context.Context, project, jar, version string) (*Dist, error) {
	hash, err := hashTree(project)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(cacheRoot(), "hadoop", filepath.Base(project)+"-"+version+"-"+hash)
	cpFile := filepath.Join(dir, "classpath.txt")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// Concurrent test processes build each version once.
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, err
	}
	if b, err := os.ReadFile(cpFile); err == nil {
		return &Dist{Version: version, Classpath: string(b)}, nil
	}
	deps := filepath.Join(dir, "deps.txt")
	cmd := exec.CommandContext(ctx, "mvn", "-q", "-B", "-f", filepath.Join(project, "pom.xml"),
		"-Dhadoop.version="+version, "-Dweft.build.dir="+filepath.Join(dir, "build"),
		"package", "dependency:build-classpath", "-Dmdep.outputFile="+deps)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("maven build of %s for Hadoop %s: %v\n%s", filepath.Base(project), version, err, out.String())
	}
	depCP, err := os.ReadFile(deps)
	if err != nil {
		return nil, err
	}
	cp := filepath.Join(dir, "build", jar) + string(os.PathListSeparator) + strings.TrimSpace(string(depCP))
	if err := os.WriteFile(cpFile, []byte(cp), 0o644); err != nil {
		return nil, err
	}
	return &Dist{Version: version, Classpath: cp}, nil
}

// hashTree hashes the Maven project's pom and sources, so edits rebuild.
func hashTree(project string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(project, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != project {
			// Build output, and nested projects, which hash themselves.
			if d.Name() == "target" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "pom.xml")); err == nil {
				return filepath.SkipDir
			}
		}
		if d.IsDir() || !(strings.HasSuffix(path, ".java") || strings.HasSuffix(path, "pom.xml")) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", path[len(project):], len(b))
		h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:12], err
}

// testJVMFlags are TestJVM's: small, quick-starting JVMs.
var testJVMFlags = []string{"-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}

// javaFlags are every profile's: IPv4 (HADOOP_OPTS' default in Hadoop's
// scripts) and the --add-opens that let Hadoop's reflection work on Java
// 17, as Hadoop's own scripts arrange.
var javaFlags = []string{
	"-Djava.net.preferIPv4Stack=true",
	"--add-opens=java.base/java.lang=ALL-UNNAMED", "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
	"--add-opens=java.base/java.util=ALL-UNNAMED", "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
	"--add-opens=java.base/java.io=ALL-UNNAMED", "--add-opens=java.base/java.net=ALL-UNNAMED",
	"--add-opens=java.base/java.nio=ALL-UNNAMED", "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
	"--add-opens=java.base/sun.security.util=ALL-UNNAMED",
}

// Command returns a java command running mainClass with confDir (a
// HADOOP_CONF_DIR) first on the classpath, as Hadoop's scripts put it,
// acting as user.
func (d *Dist) Command(ctx context.Context, confDir, user, mainClass string, args ...string) *exec.Cmd {
	argv := append([]string{}, javaFlags...)
	if d.JVM == TestJVM {
		argv = append(argv, testJVMFlags...)
	}
	argv = append(append(argv, d.JVMArgs...), "-cp", confDir+string(os.PathListSeparator)+d.Classpath, mainClass)
	cmd := exec.CommandContext(ctx, "java", append(argv, args...)...)
	cmd.Env = append(os.Environ(), "HADOOP_USER_NAME="+user, "HADOOP_CONF_DIR="+confDir)
	return cmd
}

// Run runs mainClass and returns its output.
func (d *Dist) Run(ctx context.Context, confDir, user, mainClass string, args ...string) (stdout, stderr string, err error) {
	cmd := d.Command(ctx, confDir, user, mainClass, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// cliClasses maps `yarn` subcommands to the classes Hadoop's yarn script
// runs for them.
var cliClasses = map[string]string{
	"application":        "org.apache.hadoop.yarn.client.cli.ApplicationCLI",
	"applicationattempt": "org.apache.hadoop.yarn.client.cli.ApplicationCLI",
	"container":          "org.apache.hadoop.yarn.client.cli.ApplicationCLI",
	"node":               "org.apache.hadoop.yarn.client.cli.NodeCLI",
	"queue":              "org.apache.hadoop.yarn.client.cli.QueueCLI",
}

// Hadoop runs `hadoop fs args...` (FsShell), as the hadoop script does.
func (d *Dist) Hadoop(ctx context.Context, confDir, user string, args ...string) (stdout, stderr string, err error) {
	if len(args) == 0 || args[0] != "fs" && args[0] != "dfs" {
		return "", "", fmt.Errorf("hadoop: only the fs subcommand is supported here")
	}
	return d.Run(ctx, confDir, user, "org.apache.hadoop.fs.FsShell", args[1:]...)
}

// YarnCommand returns the command `yarn <subcommand> args...` runs, as the
// real script would build it.
func (d *Dist) YarnCommand(ctx context.Context, confDir, user string, args ...string) (*exec.Cmd, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("yarn: no subcommand")
	}
	class, ok := cliClasses[args[0]]
	if !ok {
		return nil, fmt.Errorf("yarn: subcommand %q not supported here", args[0])
	}
	if class != cliClasses["application"] {
		// ApplicationCLI alone learns which of its three commands it is
		// from its first argument, as the yarn script passes it.
		args = args[1:]
	}
	return d.Command(ctx, confDir, user, class, args...), nil
}

// Yarn runs `yarn <subcommand> args...` and returns its output.
func (d *Dist) Yarn(ctx context.Context, confDir, user string, args ...string) (stdout, stderr string, err error) {
	cmd, err := d.YarnCommand(ctx, confDir, user, args...)
	if err != nil {
		return "", "", err
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// WriteConf writes a HADOOP_CONF_DIR pointing clients at a ResourceManager:
// only the addresses a user changes in yarn-site.xml.
func WriteConf(dir, rmAddr, schedulerAddr, webAddr string) error {
	return WriteConfWithFS(dir, rmAddr, schedulerAddr, webAddr, "")
}

// WriteConfWithFS is WriteConf with fs.defaultFS set (when not empty), for
// clients that also use HDFS.
func WriteConfWithFS(dir, rmAddr, schedulerAddr, webAddr, defaultFS string) error {
	return writeConf(dir, map[string]string{
		"yarn.resourcemanager.address":           rmAddr,
		"yarn.resourcemanager.scheduler.address": schedulerAddr,
		"yarn.resourcemanager.webapp.address":    webAddr,
	}, defaultFS)
}

// WriteServiceConf is WriteConf for clients that reach ResourceManagers in
// HA through one address that follows the active replica (a Kubernetes
// Service) instead of rm-ids: such a client can only retry that address,
// so it does so every second (yarn.resourcemanager.connect.retry-interval.ms,
// 30 s by default), as an operator wanting fast failover sets it.
func WriteServiceConf(dir, rmAddr, schedulerAddr, webAddr string) error {
	return writeConf(dir, map[string]string{
		"yarn.resourcemanager.address":                   rmAddr,
		"yarn.resourcemanager.scheduler.address":         schedulerAddr,
		"yarn.resourcemanager.webapp.address":            webAddr,
		"yarn.resourcemanager.connect.retry-interval.ms": "1000",
	}, "")
}

// RMAddrs are one ResourceManager's client, scheduler and web addresses.
type RMAddrs struct{ Client, Scheduler, Web string }

// WriteHAConf writes a HADOOP_CONF_DIR for ResourceManagers in HA, as
// YARN documents it (ResourceManagerHA.html): yarn.resourcemanager.ha.enabled,
// the rm-ids and each one's addresses, in the order given. Clients and AMs
// then go through Hadoop's ConfiguredRMFailoverProxyProvider, which tries
// the next rm-id when one refuses them. Failover sleeps are shortened from
// their 30 s default (yarn.resourcemanager.connect.retry-interval.ms), as an
// operator wanting fast failover sets them.
func WriteHAConf(dir, clusterID string, rms map[string]RMAddrs, defaultFS string) error {
	ids := slices.Sorted(maps.Keys(rms))
	yarn := map[string]string{
		"yarn.resourcemanager.ha.enabled":    "true",
		"yarn.resourcemanager.ha.rm-ids":     strings.Join(ids, ","),
		"yarn.resourcemanager.cluster-id":    clusterID,
		"yarn.client.failover-sleep-base-ms": "500",
		"yarn.client.failover-sleep-max-ms":  "2000",
	}
	for id, a := range rms {
		yarn["yarn.resourcemanager.address."+id] = a.Client
		yarn["yarn.resourcemanager.scheduler.address."+id] = a.Scheduler
		yarn["yarn.resourcemanager.webapp.address."+id] = a.Web
		yarn["yarn.resourcemanager.hostname."+id] = a.Client[:strings.LastIndexByte(a.Client, ':')]
	}
	return writeConf(dir, yarn, defaultFS)
}

func writeConf(dir string, yarn map[string]string, defaultFS string) error {
	// Weft's node plugin is a NodeManager with recovery: its restart keeps
	// the containers and the map outputs it serves. Saying so makes
	// MapReduce's reducers retry a fetch across the restart
	// (mapreduce.reduce.shuffle.fetch.retry.enabled defaults to this)
	// instead of penalizing the node, as on a YARN cluster with NM recovery.
	yarn["yarn.nodemanager.recovery.enabled"] = "true"
	core := map[string]string{}
	if defaultFS != "" {
		core["fs.defaultFS"] = defaultFS
	}
	return writeSites(dir, yarn, core, nil)
}

// siteXML renders properties as a Hadoop *-site.xml.
func siteXML(props map[string]string) string {
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\"?>\n<configuration>\n")
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&b, "  <property><name>%s</name><value>%s</value></property>\n", k, props[k])
	}
	b.WriteString("</configuration>\n")
	return b.String()
}

// writeSites writes a HADOOP_CONF_DIR: yarn-site.xml and core-site.xml
// with the given properties (core's on top of simple authentication),
// what every configuration here shares, and extra files by name.
func writeSites(dir string, yarn, core map[string]string, extra map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	core = maps.Clone(core)
	core["hadoop.security.authentication"] = "simple"
	files := map[string]string{
		"yarn-site.xml": siteXML(yarn),
		"core-site.xml": siteXML(core),
		// MapReduce jobs go to YARN (here: Weft), not the local runner.
		"mapred-site.xml": siteXML(map[string]string{"mapreduce.framework.name": "yarn"}),
		// What a NodeManager installation ships for containers' logs (the
		// AMs' -Dlog4j.configuration): a syslog file in the container's log
		// directory.
		"container-log4j.properties": "log4j.rootLogger=${hadoop.root.logger}\nhadoop.root.logger=INFO,CLA\n" +
			"log4j.appender.CLA=org.apache.hadoop.yarn.ContainerLogAppender\nlog4j.appender.CLA.containerLogDir=${yarn.app.container.log.dir}\n" +
			"log4j.appender.CLA.containerLogFile=${hadoop.root.logfile}\nlog4j.appender.CLA.totalLogFileSize=${yarn.app.container.log.filesize}\n" +
			"hadoop.root.logfile=syslog\nyarn.app.container.log.filesize=0\n" +
			"log4j.appender.CLA.layout=org.apache.log4j.PatternLayout\nlog4j.appender.CLA.layout.ConversionPattern=%d{ISO8601} %p [%t] %c: %m%n\n",
		"log4j.properties": "log4j.rootLogger=WARN,stderr\nlog4j.appender.stderr=org.apache.log4j.ConsoleAppender\nlog4j.appender.stderr.Target=System.err\nlog4j.appender.stderr.layout=org.apache.log4j.PatternLayout\nlog4j.appender.stderr.layout.ConversionPattern=%p %c: %m%n\n",
	}
	maps.Copy(files, extra)
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Jar returns the path of the classpath's jar whose file name starts with
// prefix (e.g. "hadoop-yarn-applications-distributedshell-").
func (d *Dist) Jar(prefix string) (string, error) {
	for _, p := range filepath.SplitList(d.Classpath) {
		if strings.HasPrefix(filepath.Base(p), prefix) && strings.HasSuffix(p, ".jar") {
			return p, nil
		}
	}
	return "", fmt.Errorf("hadoop %s: no %s*.jar on the classpath", d.Version, prefix)
}

// Home lays the classpath out as a Hadoop installation, the directory
// HADOOP_*_HOME name inside containers: every jar in
// share/hadoop/common/lib (hard links, or copies across filesystems), and
// the other share/hadoop directories yarn.application.classpath lists,
// empty. Built once per Dist.
func (d *Dist) Home() (string, error) {
	var first string
	for _, p := range filepath.SplitList(d.Classpath) {
		if strings.HasSuffix(p, ".jar") {
			first = p
			break
		}
	}
	if first == "" {
		return "", fmt.Errorf("hadoop %s: empty classpath", d.Version)
	}
	h := sha256.Sum256([]byte(d.Classpath))
	home := filepath.Join(cacheRoot(), "hadoop", "home-"+d.Version+"-"+hex.EncodeToString(h[:6]))
	done := filepath.Join(home, ".complete")
	if _, err := os.Stat(done); err == nil {
		return home, nil
	}
	lib := filepath.Join(home, "share", "hadoop", "common", "lib")
	for _, dir := range []string{lib, filepath.Join(home, "share/hadoop/hdfs/lib"), filepath.Join(home, "share/hadoop/yarn/lib"),
		filepath.Join(home, "share/hadoop/mapreduce/lib")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
	}
	for _, p := range filepath.SplitList(d.Classpath) {
		if !strings.HasSuffix(p, ".jar") {
			continue
		}
		if err := linkOrCopy(p, filepath.Join(lib, filepath.Base(p))); err != nil {
			return "", err
		}
	}
	return home, os.WriteFile(done, nil, 0o644)
}
