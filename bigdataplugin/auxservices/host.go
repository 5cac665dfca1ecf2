// Package auxservices runs a node's Java auxiliary services — what a
// NodeManager loads from yarn.nodemanager.aux-services, such as Spark's
// external shuffle service (spark_shuffle, YarnShuffleService) — in a JVM
// the node plugin supervises, and feeds them the AuxiliaryService
// lifecycle: applications initialized with the service data AMs put in
// launch contexts, containers started and stopped, applications ended.
package auxservices

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

//go:embed AuxServiceHost.java
var hostSource []byte

// Service is one auxiliary service, as yarn.nodemanager.aux-services.<name>.class
// and .classpath name it.
type Service struct {
	// Name is the service's id in launch contexts' service data
	// (spark_shuffle).
	Name string
	// Class implements org.apache.hadoop.yarn.server.api.AuxiliaryService.
	Class string
	// Classpath holds the service's jars (dir/* entries allowed), searched
	// before the node's Hadoop for everything but Hadoop's own classes.
	Classpath string
}

// Options configures a Host.
type Options struct {
	Services []Service
	// Java is the java command (default $JAVA_HOME/bin/java, else java on
	// PATH). Its JDK compiles the host at start (Java's source launcher).
	Java string
	// HadoopClasspath is the node's Hadoop (hadoop-common, hadoop-yarn-api
	// and -common with their libraries): the classes services and the host
	// share.
	HadoopClasspath string
	// JVMArgs are the JVM's options (default -Xmx256m).
	JVMArgs []string
	// Conf is the services' Hadoop Configuration beyond the defaults
	// (spark.shuffle.service.port, spark.authenticate, ...).
	Conf map[string]string
	// RecoveryDir, when set, is where each service keeps what it must
	// recover after a restart (<RecoveryDir>/<name>), as a NodeManager's
	// yarn.nodemanager.recovery.dir/nm-aux-services with recovery on.
	RecoveryDir string
	// WorkDir holds the host's source (default a temporary directory).
	WorkDir string
	// Restart is the wait before a JVM that exited is started again
	// (default 2s).
	Restart time.Duration
	// Wait bounds how long a request waits for a JVM that is not up
	// (starting, or failing to start) before it fails (default 1m): a
	// container start then fails with the error instead of hanging.
	Wait time.Duration
	// Stderr receives the JVM's log (default os.Stderr).
	Stderr io.Writer
	Logger *slog.Logger
}

// Host is the supervised JVM. Its methods block while the JVM (re)starts;
// calls are answered one at a time.
type Host struct {
	opts  Options
	names map[string]bool

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when the JVM is (re)started or stops
	proc    *jvm
	// apps are the applications initialized since the plugin started, by
	// service, replayed to a restarted JVM: a service whose recovery is
	// off still knows them, as it would under a NodeManager that never
	// restarted them.
	apps map[string]map[string]appInit
}

type appInit struct {
	user string
	data []byte
}

type jvm struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	meta map[string][]byte
	dead chan struct{}
}

const classInvalidAuxService = "org.apache.hadoop.yarn.exceptions.InvalidAuxServiceException"

// New validates opts; Run starts the JVM.
func New(opts Options) (*Host, error) {
	names := map[string]bool{}
	for _, s := range opts.Services {
		if s.Name == "" || s.Class == "" || strings.ContainsAny(s.Name, " =") {
			return nil, fmt.Errorf("auxservices: service %q: wants a name (no spaces or '=') and a class", s.Name)
		}
		if names[s.Name] {
			return nil, fmt.Errorf("auxservices: service %q given twice", s.Name)
		}
		names[s.Name] = true
	}
	if opts.Java == "" {
		opts.Java = "java"
		if home := os.Getenv("JAVA_HOME"); home != "" {
			opts.Java = filepath.Join(home, "bin", "java")
		}
	}
	if opts.JVMArgs == nil {
		opts.JVMArgs = []string{"-Xmx256m"}
	}
	if opts.Restart == 0 {
		opts.Restart = 2 * time.Second
	}
	if opts.Wait == 0 {
		opts.Wait = time.Minute
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Host{opts: opts, names: names, changed: make(chan struct{}), apps: map[string]map[string]appInit{}}, nil
}

// HadoopClasspath is the class path of a Hadoop installation's common and
// YARN jars with their libraries, as yarn.application.classpath lists
// them; empty for no installation.
func HadoopClasspath(home string) string {
	if home == "" {
		return ""
	}
	var cp []string
	for _, d := range []string{"common", "common/lib", "yarn", "yarn/lib"} {
		cp = append(cp, filepath.Join(home, "share", "hadoop", d, "*"))
	}
	return strings.Join(cp, string(os.PathListSeparator))
}

// Has says whether the node runs the named service.
func (h *Host) Has(name string) bool { return h.names[name] }

// Names are the services' names, sorted.
func (h *Host) Names() []string {
	var n []string
	for name := range h.names {
		n = append(n, name)
	}
	sort.Strings(n)
	return n
}

// Run starts the JVM and starts it again whenever it exits, until ctx
// ends; then it closes the JVM's stdin (the services stop) and waits a
// little for it.
func (h *Host) Run(ctx context.Context) error {
	if len(h.opts.Services) == 0 {
		<-ctx.Done()
		return nil
	}
	src, err := h.writeSource()
	if err != nil {
		return err
	}
	if h.opts.WorkDir == "" {
		defer os.RemoveAll(filepath.Dir(src))
	}
	for {
		p, err := h.start(src)
		if err != nil {
			h.opts.Logger.Error("auxiliary services did not start", "services", h.Names(), "err", err)
		} else {
			h.opts.Logger.Info("auxiliary services started", "services", h.Names(), "pid", p.cmd.Process.Pid)
			select {
			case <-ctx.Done():
				h.stop(p)
				return nil
			case <-p.dead:
				h.opts.Logger.Error("auxiliary services exited; starting them again", "services", h.Names(), "err", p.cmd.ProcessState)
				h.setProc(nil)
			}
		}
		select {
		case <-ctx.Done():
			h.setProc(nil)
			return nil
		case <-time.After(h.opts.Restart):
		}
	}
}

func (h *Host) writeSource() (string, error) {
	dir := h.opts.WorkDir
	if dir == "" {
		d, err := os.MkdirTemp("", "weft-auxservices-")
		if err != nil {
			return "", err
		}
		dir = d
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	src := filepath.Join(dir, "AuxServiceHost.java")
	if err := os.WriteFile(src, hostSource, 0o644); err != nil {
		return "", err
	}
	// Hadoop's and the services' logs at INFO on stderr, which the plugin
	// passes on to its own log.
	if err := os.WriteFile(filepath.Join(dir, "log4j.properties"), []byte(log4j), 0o644); err != nil {
		return "", err
	}
	return src, nil
}

const log4j = `log4j.rootLogger=INFO,stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n
`

// Args is the JVM's command line after the java command.
func (h *Host) Args(src string) []string {
	args := append([]string{}, h.opts.JVMArgs...)
	args = append(args, "-Dlog4j.configuration=file:"+filepath.Join(filepath.Dir(src), "log4j.properties"),
		"-cp", h.opts.HadoopClasspath, src)
	for _, s := range h.opts.Services {
		args = append(args, "--service", s.Name+"="+s.Class+"="+s.Classpath)
	}
	if h.opts.RecoveryDir != "" {
		args = append(args, "--recovery", h.opts.RecoveryDir)
	}
	keys := make([]string, 0, len(h.opts.Conf))
	for k := range h.opts.Conf {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--conf", k+"="+h.opts.Conf[k])
	}
	return args
}

func (h *Host) start(src string) (*jvm, error) {
	cmd := exec.Command(h.opts.Java, h.Args(src)...)
	cmd.Stderr = h.opts.Stderr
	// The JVM goes with the plugin, even killed outright: a restarted
	// plugin starts its own, on the same ports.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &jvm{cmd: cmd, in: in, out: bufio.NewReader(outPipe), dead: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(p.dead)
	}()
	// Compiling the host and starting the services takes seconds; one
	// whose start hangs is killed and started again.
	ready := time.AfterFunc(h.opts.Wait, func() { cmd.Process.Kill() })
	line, err := p.out.ReadString('\n')
	ready.Stop()
	if err != nil || strings.TrimSpace(line) != "ready" {
		cmd.Process.Kill()
		<-p.dead
		return nil, fmt.Errorf("auxiliary services' JVM did not become ready (%q): %v", strings.TrimSpace(line), err)
	}
	// Replay what the previous JVM knew before anyone else may call.
	h.mu.Lock()
	replay := map[string]map[string]appInit{}
	for svc, apps := range h.apps {
		replay[svc] = map[string]appInit{}
		for app, a := range apps {
			replay[svc][app] = a
		}
	}
	h.mu.Unlock()
	for svc, apps := range replay {
		for app, a := range apps {
			if _, err := p.call("initApp", svc, app, a.user, base64.StdEncoding.EncodeToString(a.data)); err != nil {
				h.opts.Logger.Error("auxiliary service did not take a known application back", "service", svc, "app", app, "err", err)
			}
		}
	}
	reply, err := p.call("meta")
	if err != nil {
		cmd.Process.Kill()
		<-p.dead
		return nil, err
	}
	p.meta = map[string][]byte{}
	for _, f := range strings.Fields(reply) {
		name, b64, _ := strings.Cut(f, "=")
		p.meta[name], _ = base64.StdEncoding.DecodeString(b64)
	}
	h.setProc(p)
	return p, nil
}

func (h *Host) setProc(p *jvm) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.proc = p
	close(h.changed)
	h.changed = make(chan struct{})
}

func (h *Host) stop(p *jvm) {
	h.setProc(nil)
	p.in.Close()
	select {
	case <-p.dead:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.dead
	}
}

// RemoteError is a service's exception, named by its Java class.
type RemoteError struct {
	Class, Message string
}

func (e *RemoteError) Error() string { return e.Class + ": " + e.Message }

// JavaClass is the exception's class and message, for the protocol that
// reports it.
func (e *RemoteError) JavaClass() (string, string) { return e.Class, e.Message }

// call sends one request and reads its answer. The caller holds the JVM
// alone (Host.do, or start before the JVM is published).
func (p *jvm) call(fields ...string) (string, error) {
	if _, err := io.WriteString(p.in, strings.Join(fields, " ")+"\n"); err != nil {
		return "", fmt.Errorf("auxiliary services: %w", err)
	}
	line, err := p.out.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("auxiliary services: %w", err)
	}
	line = strings.TrimSuffix(line, "\n")
	if rest, ok := strings.CutPrefix(line, "err "); ok {
		class, b64, _ := strings.Cut(rest, " ")
		msg, _ := base64.StdEncoding.DecodeString(b64)
		return "", &RemoteError{Class: class, Message: string(msg)}
	}
	if line == "ok" {
		return "", nil
	}
	if rest, ok := strings.CutPrefix(line, "ok "); ok {
		return rest, nil
	}
	return "", fmt.Errorf("auxiliary services: unexpected answer %q", line)
}

// do runs one request on the JVM, waiting for it to be up until ctx ends
// or opts.Wait passes.
func (h *Host) do(ctx context.Context, fields ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, h.opts.Wait)
	defer cancel()
	for {
		h.mu.Lock()
		p, changed := h.proc, h.changed
		if p != nil {
			defer h.mu.Unlock()
			reply, err := p.call(fields...)
			var re *RemoteError
			if err != nil && !errors.As(err, &re) {
				// The JVM is gone or lost its place in the conversation:
				// no one else talks to it; Run starts another.
				h.proc = nil
				p.cmd.Process.Kill()
			}
			return reply, err
		}
		h.mu.Unlock()
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("auxiliary services not running: %w", ctx.Err())
		case <-changed:
		}
	}
}

// InitApp initializes an application with a service, handing it the
// service data from a launch context, as a NodeManager does when the
// application's first container with that data starts on the node.
func (h *Host) InitApp(ctx context.Context, service, app, user string, data []byte) error {
	if !h.Has(service) {
		return &RemoteError{Class: classInvalidAuxService, Message: "The auxService:" + service + " does not exist"}
	}
	if _, err := h.do(ctx, "initApp", service, app, user, base64.StdEncoding.EncodeToString(data)); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.apps[service] == nil {
		h.apps[service] = map[string]appInit{}
	}
	h.apps[service][app] = appInit{user: user, data: data}
	return nil
}

// StopApp tells every service an application ended: Spark's shuffle
// service forgets its executors and secret.
func (h *Host) StopApp(ctx context.Context, app string) error {
	if len(h.names) == 0 {
		return nil
	}
	h.mu.Lock()
	for _, apps := range h.apps {
		delete(apps, app)
	}
	h.mu.Unlock()
	_, err := h.do(ctx, "stopApp", app)
	return err
}

// InitContainer and StopContainer pass a container's start and end to
// every service.
func (h *Host) InitContainer(ctx context.Context, container, user string) error {
	if len(h.names) == 0 {
		return nil
	}
	_, err := h.do(ctx, "initContainer", container, user)
	return err
}

func (h *Host) StopContainer(ctx context.Context, container, user string) error {
	if len(h.names) == 0 {
		return nil
	}
	_, err := h.do(ctx, "stopContainer", container, user)
	return err
}

// MetaData is each service's getMetaData(), as StartContainers returns
// it; empty while the JVM is not up.
func (h *Host) MetaData() map[string][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.proc == nil {
		return nil
	}
	return h.proc.meta
}
