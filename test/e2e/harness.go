// Package e2e holds Weft's end-to-end suites: real binaries, real Hadoop
// clients from Maven, real peers. This file starts and stops Weft's
// processes for them.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/weft-sh/weft/test/kube"
)

// BuildBinaries compiles Weft's commands into dir and returns it.
func BuildBinaries(ctx context.Context, dir string) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+string(filepath.Separator), "./cmd/...")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	return nil
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// FreeAddr returns a loopback address with a port free right now.
func FreeAddr() (string, error) {
	addrs, err := FreeAddrs(1)
	if err != nil {
		return "", err
	}
	return addrs[0], nil
}

// FreeAddrs returns n distinct loopback addresses with ports free right
// now. Every listener stays open until all n are chosen: the kernel may
// hand out a port again as soon as it is closed, and picking addresses one
// by one can give a standby weft-rm its peer's scheduler port.
func FreeAddrs(n int) ([]string, error) {
	addrs := make([]string, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("choosing a free port: %w", err)
		}
		defer ln.Close()
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}

// RM is a running weft-rm process.
type RM struct {
	Bin, DataDir                       string
	ClientAddr, SchedulerAddr, WebAddr string
	Args                               []string
	// HA: one of several replicas, whose client port stays closed while
	// it is a standby; Start waits for its web port only.
	HA bool
	// Netns, when set, is the network namespace (one of the kind-style
	// cluster's) the process runs in.
	Netns string

	cmd  *exec.Cmd
	mu   sync.Mutex
	logs bytes.Buffer
	done chan struct{}
}

// Start launches the process and waits until both ports answer.
func (r *RM) Start(ctx context.Context) error {
	if r.SchedulerAddr == "" {
		addr, err := FreeAddr()
		if err != nil {
			return err
		}
		r.SchedulerAddr = addr
	}
	args := append([]string{"--client-address", r.ClientAddr, "--scheduler-address", r.SchedulerAddr,
		"--webapp-address", r.WebAddr, "--data-dir", r.DataDir}, r.Args...)
	r.cmd = exec.Command(r.Bin, args...)
	if r.Netns != "" {
		kube.InNetns(r.cmd, r.Netns)
	}
	r.cmd.Stdout, r.cmd.Stderr = &lockedWriter{mu: &r.mu, w: &r.logs}, &lockedWriter{mu: &r.mu, w: &r.logs}
	if err := r.cmd.Start(); err != nil {
		return err
	}
	r.done = make(chan struct{})
	go func() { r.cmd.Wait(); close(r.done) }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-r.done:
			return fmt.Errorf("weft-rm exited: %s", r.Logs())
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if c, err := net.DialTimeout("tcp", r.ClientAddr, time.Second); err == nil || r.HA {
			if c != nil {
				c.Close()
			}
			if resp, err := http.Get("http://" + r.WebAddr + "/ws/v1/cluster/info"); err == nil {
				resp.Body.Close()
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.Stop()
	return fmt.Errorf("weft-rm not ready: %s", r.Logs())
}

// Stop ends the process gracefully (SIGTERM), killing it after 15s.
func (r *RM) Stop() error {
	if r.cmd == nil || r.cmd.Process == nil {
		return nil
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(15 * time.Second):
		r.cmd.Process.Kill()
		<-r.done
	}
	return nil
}

// Kill ends the process at once (SIGKILL), as an OOM kill or a lost node
// does: nothing is flushed or closed on the way out.
func (r *RM) Kill() error {
	if r.cmd == nil || r.cmd.Process == nil {
		return nil
	}
	if err := r.cmd.Process.Kill(); err != nil {
		return err
	}
	<-r.done
	return nil
}

// Active says whether the RM answers YARN's /isActive as the active one.
func (r *RM) Active() bool {
	resp, err := http.Get("http://" + r.WebAddr + "/isActive")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// PID is the process id, 0 before Start.
func (r *RM) PID() int {
	if r.cmd == nil || r.cmd.Process == nil {
		return 0
	}
	return r.cmd.Process.Pid
}

// ProcessCPU returns the user+system CPU time a running process has used,
// from /proc (Linux).
func ProcessCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the parenthesized command name; utime and stime are the
	// 14th and 15th fields, in clock ticks (USER_HZ, 100 on Linux).
	rest := string(b[bytes.LastIndexByte(b, ')')+2:])
	var f [13]string
	var utime, stime int64
	if _, err := fmt.Sscan(rest, &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &f[8], &f[9], &f[10], &utime, &stime); err != nil {
		return 0, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// ProcessRSS returns a running process's resident set (VmRSS) in bytes,
// from /proc (Linux).
func ProcessRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse /proc/%d/status: %w", pid, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// GetJSON decodes the JSON answer of a GET that must be 200 OK, as from
// weft-rm's REST API.
func GetJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// Logs returns what the process printed.
func (r *RM) Logs() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logs.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// SaveProfile fetches /debug/pprof/<which> from a weft-rm run with
// --profiling into file.
func SaveProfile(ctx context.Context, web, which, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+web+"/debug/pprof/"+which, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("profile %s: %w", which, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile %s: %s", which, resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("profile %s: %w", which, err)
	}
	return f.Close()
}
