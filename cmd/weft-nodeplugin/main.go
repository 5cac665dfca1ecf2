// Command weft-nodeplugin runs beside the kubelet on every node: it plays
// YARN's NodeManager to ApplicationMasters, running their containers as
// pods bound to this node.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/weft-sh/weft/bigdataplugin/auxservices"
	"github.com/weft-sh/weft/bigdataplugin/colocation"
	"github.com/weft-sh/weft/bigdataplugin/plugin"
	"github.com/weft-sh/weft/translator"
)

func main() {
	var cfg plugin.Config
	var kubeconfig, profile string
	host, _ := os.Hostname()
	if n := os.Getenv("NODE_NAME"); n != "" {
		host = n
	}
	flag.StringVar(&cfg.Address, "address", "127.0.0.1:8041", "ContainerManagementProtocol address (yarn.nodemanager.address)")
	flag.StringVar(&cfg.NodeManager.NodeName, "node-name", strings.ToLower(host), "this node's name (default $NODE_NAME or the hostname)")
	flag.StringVar(&cfg.NMKeySecret, "nm-key-secret", "", "namespace/name of the Secret with the master key shared with weft-rm")
	flag.StringVar(&cfg.NMKeyFile, "nm-key-file", "", "file with the master key shared with weft-rm (instead of --nm-key-secret)")
	flag.StringVar(&kubeconfig, "kubeconfig", "in-cluster", "kubeconfig; \"in-cluster\" for the pod's service account")
	flag.StringVar(&cfg.NodeManager.ClusterID, "cluster-id", "weft", "the cluster id of the weft-rm this node serves")
	flag.StringVar(&cfg.NodeManager.Namespace, "namespace", "weft-jobs", "namespace of the pods of YARN applications")
	flag.StringVar(&profile, "profile", "weft", "colocation profile for reclaimed resources: weft (this plugin's colocation agent), katalyst, koordinator, plain")
	coloc := plugin.Colocation{Defaults: colocation.DefaultConfig()}
	d := &coloc.Defaults
	runAgent := flag.Bool("colocation", true, "run the colocation agent (with --profile weft): publish reclaimable capacity as weft.io/reclaimed-*, bound the big box")
	flag.StringVar(&coloc.CgroupRoot, "cgroup-root", "/sys/fs/cgroup", "where the cgroup hierarchies are mounted (v1 or v2, detected)")
	flag.StringVar(&coloc.CgroupDriver, "cgroup-driver", "cgroupfs", "the kubelet's cgroup driver: cgroupfs or systemd")
	flag.StringVar(&d.NodeCgroup, "node-cgroup", d.NodeCgroup, "where this node is one of several kubelets on one machine, each in a cgroup subtree of its own: that kubelet's --cgroup-root (e.g. /weft-node-1), the node's root cgroup relative to the hierarchies' root; the node's use is read from it (not /proc, which counts every node), its capacity from its limits where set, and the big box is under it (<node-cgroup>/kubepods/besteffort, or the systemd driver's names for it); empty: the node is the whole machine")
	flag.StringVar(&coloc.ProcRoot, "proc-root", "/proc", "the node's /proc")
	flag.StringVar(&coloc.SysRoot, "sys-root", "/sys", "the node's /sys")
	flag.StringVar(&coloc.ConfigMap, "colocation-configmap", "weft-system/weft-colocation", "namespace/name of the ConfigMap whose "+colocation.ConfigKey+" overrides these flags cluster-wide")
	flag.DurationVar(&d.Interval.Duration, "colocation-interval", d.Interval.Duration, "how often online usage is measured and the big box reconciled")
	flag.Float64Var(&d.CPUWatermark, "cpu-watermark", d.CPUWatermark, "percent of the node's allocatable CPU online and batch work may use together")
	flag.Float64Var(&d.MemoryWatermark, "memory-watermark", d.MemoryWatermark, "percent of the node's allocatable memory online and batch work may use together")
	flag.Float64Var(&d.MemoryEvictionWatermark, "memory-eviction-watermark", d.MemoryEvictionWatermark, "node memory use, in percent of allocatable, above which batch pods are evicted, lowest tier first")
	flag.DurationVar(&d.PeakWindow.Duration, "peak-window", d.PeakWindow.Duration, "online usage counts at its peak over this window")
	flag.Float64Var(&d.Hysteresis, "hysteresis", d.Hysteresis, "percent of allocatable the reclaimable capacity must move before it is published again")
	flag.DurationVar(&d.WindowGrace.Duration, "window-grace", d.WindowGrace.Duration, "no new batch work this long before a colocation window starts")
	flag.DurationVar(&d.Cooldown.Duration, "eviction-cooldown", d.Cooldown.Duration, "no new batch work this long after an eviction")
	flag.DurationVar(&d.LowerAfter.Duration, "lower-after", d.LowerAfter.Duration, "how long the Node's allocatable keeps a fallen reclaimed capacity while weft-rm schedules by the new one (weft.io/reclaimed-lowering), so that the kubelet admits the containers granted before the fall (0: both at once)")
	flag.BoolVar(&d.CPUSet, "box-cpuset", d.CPUSet, "bind the big box to the whole physical cores its quota fills (hyper-thread siblings together), leaving the rest to online work; off where the kubelet's static CPU manager owns cpusets")
	flag.BoolVar(&d.CPUIdle, "box-cpu-idle", d.CPUIdle, "put the big box in the kernel's idle scheduling class instead of the least CPU weight (conflicts with the kubelet's QoS cgroup updates)")
	vcoreMilli := flag.Int64("milli-cpu-per-vcore", 1000, "CPU of one YARN vcore, in millicores (as weft-rm's)")
	strictCPU := flag.Bool("strict-cpu", false, "cap each container's CPU at its vcores (a CPU limit), as YARN's cgroups strict-resource-usage; by default vcores are a share")
	flag.StringVar(&cfg.ShuffleAddress, "shuffle-address", "127.0.0.1:13562", "MapReduce shuffle service address (mapreduce.shuffle.port)")
	flag.StringVar(&cfg.HTTPAddress, "http-address", "127.0.0.1:8042", "containers' logs over HTTP (yarn.nodemanager.webapp.address)")
	flag.StringVar(&cfg.RMWebAddress, "rm-webapp-address", "", "weft-rm's REST address (yarn.resourcemanager.webapp.address; with HA every replica's, comma-separated), asked which applications ended so their files can go; empty keeps them")
	flag.DurationVar(&cfg.LogRetention, "log-retention", 3*time.Hour, "how long ended applications' container logs are kept (yarn.nodemanager.log.retain-seconds)")
	flag.DurationVar(&cfg.CleanupInterval, "cleanup-interval", time.Minute, "how often ended applications' files are looked for")
	cacheMB := flag.Int64("localizer-cache-target-size-mb", 10240, "size the localized-resource cache is kept under, LRU first (yarn.nodemanager.localizer.cache.target-size-mb)")
	flag.DurationVar(&cfg.CacheCleanupInterval, "localizer-cache-cleanup-interval", 10*time.Minute, "how often the cache is cleaned (yarn.nodemanager.localizer.cache.cleanup.interval-ms)")
	auxClass, auxCP, auxConf := kvFlag{}, kvFlag{}, kvFlag{}
	flag.Var(auxClass, "aux-service", "an auxiliary service run in a JVM beside the plugin, name=class (yarn.nodemanager.aux-services and its .<name>.class), e.g. spark_shuffle=org.apache.spark.network.yarn.YarnShuffleService; repeatable")
	flag.Var(auxCP, "aux-service-classpath", "the service's jars, name=classpath (yarn.nodemanager.aux-services.<name>.classpath; dir/* entries allowed), searched before the node's Hadoop for all but Hadoop's classes; repeatable")
	flag.Var(auxConf, "aux-service-conf", "a setting of the services' Hadoop Configuration, key=value (spark.shuffle.service.port=7337, spark.authenticate=true); repeatable")
	auxHadoopCP := flag.String("aux-services-hadoop-classpath", "", "the node's Hadoop classes the services run on (hadoop-common, hadoop-yarn-api and -common with their libraries); default: from --hadoop-home")
	auxJava := flag.String("aux-services-java", "", "the java command of the services' JVM, from a JDK (it compiles its small host at start); default: from --java-home, else java on PATH")
	auxJVMOpts := flag.String("aux-services-jvm-opts", "-Xmx256m", "the services' JVM options, space-separated")
	recoveryDir := flag.String("recovery-dir", "/var/lib/weft/nm-recovery", "where the node keeps what must survive its restart (yarn.nodemanager.recovery.dir): the auxiliary services' state under nm-aux-services/<name>")
	cfg.NodeManager.Runtime = translator.DefaultRuntime()
	cfg.NodeManager.Runtime.AddFlags(flag.CommandLine)
	flag.Parse()

	for name, class := range auxClass {
		cfg.AuxServices.Services = append(cfg.AuxServices.Services, auxservices.Service{Name: name, Class: class, Classpath: auxCP[name]})
	}
	for name := range auxCP {
		if _, ok := auxClass[name]; !ok {
			fmt.Fprintf(os.Stderr, "weft-nodeplugin: --aux-service-classpath %s: no --aux-service %s=<class>\n", name, name)
			os.Exit(2)
		}
	}
	sort.Slice(cfg.AuxServices.Services, func(i, j int) bool { return cfg.AuxServices.Services[i].Name < cfg.AuxServices.Services[j].Name })
	cfg.AuxServices.Conf = auxConf
	cfg.AuxServices.JVMArgs = strings.Fields(*auxJVMOpts)
	cfg.AuxServices.RecoveryDir = filepath.Join(*recoveryDir, "nm-aux-services")
	cfg.AuxServices.Java = *auxJava
	if cfg.AuxServices.Java == "" && cfg.NodeManager.Runtime.JavaHome != "" {
		cfg.AuxServices.Java = filepath.Join(cfg.NodeManager.Runtime.JavaHome, "bin", "java")
	}
	cfg.AuxServices.HadoopClasspath = *auxHadoopCP
	if cfg.AuxServices.HadoopClasspath == "" {
		cfg.AuxServices.HadoopClasspath = auxservices.HadoopClasspath(cfg.NodeManager.Runtime.HadoopHome)
	}

	cfg.CacheTargetSize = *cacheMB << 20
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	p, err := translator.ProfileByName(profile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "weft-nodeplugin: %v\n", err)
		os.Exit(2)
	}
	p.MilliCPUPerVCore = *vcoreMilli
	p.StrictCPU = *strictCPU
	cfg.NodeManager.Profile = p
	if p.Name == translator.Weft.Name && *runAgent {
		if err := coloc.Defaults.Validate(); err != nil {
			fmt.Fprintf(os.Stderr, "weft-nodeplugin: colocation: %v\n", err)
			os.Exit(2)
		}
		cfg.Colocation = &coloc
	}
	if kubeconfig == "in-cluster" {
		cfg.Kubernetes, err = rest.InClusterConfig()
	} else {
		cfg.Kubernetes, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "weft-nodeplugin: kubernetes: %v\n", err)
		os.Exit(2)
	}
	pl, err := plugin.New(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "weft-nodeplugin: %v\n", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := pl.Serve(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "weft-nodeplugin: %v\n", err)
		os.Exit(1)
	}
}

// kvFlag is a repeatable key=value flag.
type kvFlag map[string]string

func (f kvFlag) String() string {
	var kv []string
	for k, v := range f {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

func (f kvFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	f[k] = v
	return nil
}
