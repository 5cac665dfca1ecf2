package translator

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Runtime is what every container pod runs with besides its launch
// context — the part of a NodeManager's setup that is the node's, not the
// application's: the image with Java and Hadoop, Hadoop's configuration,
// the network, and the localizer that fetches the container's resources.
type Runtime struct {
	// Image runs the container's commands.
	Image string `json:"image,omitempty"`
	// JavaHome is JAVA_HOME inside Image.
	JavaHome string `json:"javaHome,omitempty"`
	// HadoopHome, when set, is the Hadoop installation inside the pod:
	// HADOOP_HOME and HADOOP_{COMMON,HDFS,YARN,MAPRED}_HOME, which
	// yarn.application.classpath refers to.
	HadoopHome string `json:"hadoopHome,omitempty"`
	// HadoopConf names a ConfigMap (core-site.xml, yarn-site.xml, ...) in
	// the pods' namespace, mounted at ConfDir as HADOOP_CONF_DIR: what a
	// NodeManager's containers find in their class path.
	HadoopConf string `json:"hadoopConfConfigMap,omitempty"`
	// HostNetwork runs containers in the node's network namespace, as YARN
	// containers run: the addresses AMs and shuffle servers advertise are
	// the node's, and NodeIds are node names.
	HostNetwork bool `json:"hostNetwork"`
	// HostPaths are node directories shown read-only at the same path in
	// every container (a node-provided runtime: /usr with Java, a Hadoop
	// installation), as a NodeManager's containers see its filesystem.
	HostPaths []string `json:"hostPaths,omitempty"`
	// LocalizerImage runs `weft-localizer` before the container starts, to
	// fetch its LocalResources into the working directory.
	LocalizerImage string `json:"localizerImage,omitempty"`
	// CacheDir is the node directory where localized resources are cached
	// across containers (default /var/lib/weft/filecache).
	CacheDir string `json:"localizerCacheDir,omitempty"`
	// LogRoot, when set, is the node directory holding each container's
	// log directory (<LogRoot>/<app>/<container>), as a NodeManager's
	// yarn.nodemanager.log-dirs: the logs outlive the pod and the node
	// plugin serves them. Empty keeps them in the pod only.
	LogRoot string `json:"logRoot,omitempty"`
	// LocalRoot, when set, is the node directory holding applications'
	// local directories (<LocalRoot>/usercache/<user>/appcache/<app>), as a
	// NodeManager's yarn.nodemanager.local-dirs: the containers' LOCAL_DIRS,
	// shared by an application's containers on the node, where map outputs
	// stay for the shuffle service after their task ends.
	LocalRoot string `json:"localRoot,omitempty"`
}

// AppLocalDir is an application's local directory under a local root.
func AppLocalDir(root, user, app string) string {
	return filepath.Join(root, "usercache", filepath.Base(user), "appcache", app)
}

// CacheRefsFile is where a container's localizer records the cache
// entries it linked (localizer.WriteRefs).
func CacheRefsFile(root, user, app, container string) string {
	return filepath.Join(AppLocalDir(root, user, app), ".weft-cache-refs", container)
}

// CacheRefsGlob matches every container's CacheRefsFile under root.
func CacheRefsGlob(root string) string {
	return filepath.Join(root, "usercache", "*", "appcache", "*", ".weft-cache-refs", "*")
}

// LogDirOf is a container's log directory under a log root.
func LogDirOf(root, app, container string) string {
	return filepath.Join(root, app, container)
}

// ConfDir is where HadoopConf is mounted.
const ConfDir = "/weft/conf"

// DefaultRuntime is the runtime of the node images Weft builds.
func DefaultRuntime() Runtime {
	return Runtime{Image: "weft.local/node-runtime:1", JavaHome: "/usr/lib/jvm/java-17-openjdk-amd64", HostNetwork: true,
		LocalizerImage: "weft.local/weft:dev", CacheDir: "/var/lib/weft/filecache", LocalRoot: "/var/lib/weft/local",
		LogRoot: "/var/log/weft/containers"}
}

// AddFlags registers the runtime's settings on fs, for the binaries that
// make container pods, with r's values as their defaults (start from
// DefaultRuntime).
func (r *Runtime) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&r.Image, "container-image", r.Image, "image that runs YARN containers (Java and Hadoop's runtime)")
	fs.StringVar(&r.JavaHome, "java-home", r.JavaHome, "JAVA_HOME inside the container image")
	fs.StringVar(&r.HadoopHome, "hadoop-home", r.HadoopHome, "Hadoop installation inside containers (HADOOP_*_HOME)")
	fs.StringVar(&r.HadoopConf, "hadoop-conf-configmap", r.HadoopConf, "ConfigMap with Hadoop's configuration, mounted as HADOOP_CONF_DIR")
	fs.BoolVar(&r.HostNetwork, "host-network", r.HostNetwork, "run containers in the node's network, as YARN does")
	fs.Func("host-path", "node directory shown read-only to containers (repeatable)", func(s string) error {
		r.HostPaths = append(r.HostPaths, strings.TrimSpace(s))
		return nil
	})
	fs.StringVar(&r.LocalizerImage, "localizer-image", r.LocalizerImage, "image with weft-localizer")
	fs.StringVar(&r.CacheDir, "localizer-cache-dir", r.CacheDir, "node directory caching localized resources")
	fs.StringVar(&r.LocalRoot, "container-local-root", r.LocalRoot, "node directory of applications' local directories (yarn.nodemanager.local-dirs)")
	fs.StringVar(&r.LogRoot, "container-log-root", r.LogRoot, "node directory of containers' log directories (yarn.nodemanager.log-dirs)")
}

// hadoopHomes are the variables a NodeManager passes from its own
// environment (yarn.nodemanager.env-whitelist) that name Hadoop's homes.
var hadoopHomes = []string{"HADOOP_HOME", "HADOOP_COMMON_HOME", "HADOOP_HDFS_HOME", "HADOOP_YARN_HOME", "HADOOP_MAPRED_HOME"}

// apply adds the runtime to a container pod.
func (r Runtime) apply(pod *corev1.Pod, c ContainerSpec) {
	ctr := &pod.Spec.Containers[0]
	if r.HadoopHome != "" {
		for _, k := range hadoopHomes {
			ctr.Env = append(ctr.Env, corev1.EnvVar{Name: k, Value: r.HadoopHome})
		}
	}
	if r.HadoopConf != "" {
		ctr.Env = append(ctr.Env, corev1.EnvVar{Name: "HADOOP_CONF_DIR", Value: ConfDir})
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "hadoop-conf", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: r.HadoopConf}}}})
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: "hadoop-conf", MountPath: ConfDir, ReadOnly: true})
	}
	if r.LocalRoot != "" {
		dir := AppLocalDir(r.LocalRoot, c.User, c.App)
		dirOrCreate := corev1.HostPathDirectoryOrCreate
		for i := range pod.Spec.Volumes {
			if pod.Spec.Volumes[i].Name == "local" {
				pod.Spec.Volumes[i].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &dirOrCreate}}
			}
		}
		// The same path inside as on the node, so what a task records of
		// its output's location holds for the shuffle service too.
		for i := range ctr.VolumeMounts {
			if ctr.VolumeMounts[i].Name == "local" {
				ctr.VolumeMounts[i].MountPath = dir
			}
		}
		for i := range ctr.Env {
			switch ctr.Env[i].Name {
			case "LOCAL_DIRS":
				ctr.Env[i].Value = dir
			case "LOCAL_USER_DIRS":
				ctr.Env[i].Value = filepath.Join(r.LocalRoot, "usercache", filepath.Base(c.User)) + "/"
			}
		}
	}
	if r.LogRoot != "" {
		dirOrCreate := corev1.HostPathDirectoryOrCreate
		for i := range pod.Spec.Volumes {
			if pod.Spec.Volumes[i].Name == "logs" {
				pod.Spec.Volumes[i].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
					Path: LogDirOf(r.LogRoot, c.App, c.Container), Type: &dirOrCreate}}
			}
		}
	}
	if r.HostNetwork {
		pod.Spec.HostNetwork = true
		pod.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	}
	for i, p := range r.HostPaths {
		name := fmt.Sprintf("host-%d", i)
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: p}}})
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: p, ReadOnly: true})
	}
	if c.LocalResources && c.CredentialsSecret != "" {
		cache := r.CacheDir
		if cache == "" {
			cache = "/var/lib/weft/filecache"
		}
		dirOrCreate := corev1.HostPathDirectoryOrCreate
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "filecache", VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: cache, Type: &dirOrCreate}}})
		// Localized resources are links into the cache, as in a NodeManager.
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: "filecache", MountPath: CacheMount, ReadOnly: true})
		localize := corev1.Container{
			Name: "localize", Image: r.LocalizerImage, TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			Command: []string{"weft-localizer", "--resources", CredentialsDir + "/" + LocalResourcesKey, "--tokens", TokenFile,
				"--work-dir", WorkDir, "--cache-dir", CacheMount, "--user", c.User, "--app", c.App},
			// The localizer's memory is the container's: a NodeManager
			// localizes within the container's budget too.
			Resources: ctr.Resources,
			VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: WorkDir}, {Name: "filecache", MountPath: CacheMount},
				{Name: "credentials", MountPath: CredentialsDir, ReadOnly: true}},
		}
		if r.LocalRoot != "" {
			// What the container links is recorded in its application's
			// directory, where the node plugin's cache cleaner reads it
			// and which goes when the application ends.
			dir := AppLocalDir(r.LocalRoot, c.User, c.App)
			localize.Command = append(localize.Command, "--refs-file", CacheRefsFile(r.LocalRoot, c.User, c.App, c.Container))
			localize.VolumeMounts = append(localize.VolumeMounts, corev1.VolumeMount{Name: "local", MountPath: dir})
		}
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, localize)
	}
}
