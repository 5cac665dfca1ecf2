package hadoop

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Service is a long-running Java peer: a harness main (MiniYARNCluster,
// MiniDFSCluster) that prints "READY <fields...>" once it serves and stops
// when its standard input closes, or a Hadoop daemon run by its own main
// class, which stops on SIGTERM.
type Service struct {
	// Ready holds the fields of the READY line (addresses); empty for a
	// daemon.
	Ready []string

	cmd *exec.Cmd
	// stop asks the process to end.
	stop func()
	mu   sync.Mutex
	logs strings.Builder
	done chan struct{}
}

// launch starts cmd as a Service whose standard error is kept (the first
// MiB) and that ends by stop.
func launch(cmd *exec.Cmd, stop func(*Service)) (*Service, error) {
	s := &Service{cmd: cmd, done: make(chan struct{})}
	s.stop = func() { stop(s) }
	cmd.Stderr = writerFunc(func(p []byte) (int, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.logs.Len() < 1<<20 {
			s.logs.Write(p)
		}
		return len(p), nil
	})
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { cmd.Wait(); close(s.done) }()
	return s, nil
}

// StartService runs mainClass from d in dir and waits for its READY line.
func (d *Dist) StartService(ctx context.Context, dir, mainClass string, args ...string) (*Service, error) {
	return d.StartServiceWith(ctx, nil, dir, mainClass, args...)
}

// StartServiceWith is StartService with wrap, when not nil, given the
// command before it starts (to run it in a kind-style cluster's network
// namespace).
func (d *Dist) StartServiceWith(ctx context.Context, wrap func(*exec.Cmd), dir, mainClass string, args ...string) (*Service, error) {
	cmd := d.Command(context.WithoutCancel(ctx), dir, "hdfs", mainClass, args...)
	cmd.Dir = dir
	if wrap != nil {
		wrap(cmd)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s, err := launch(cmd, func(*Service) { stdin.Close() })
	if err != nil {
		return nil, err
	}
	ready := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) > 1 && f[0] == "READY" {
				ready <- f[1:]
				break
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	select {
	case s.Ready = <-ready:
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("%s exited before it was ready: %s", mainClass, s.Logs())
	case <-ctx.Done():
		s.Stop()
		return nil, fmt.Errorf("%s not ready: %w", mainClass, ctx.Err())
	}
}

// Stop asks the service to end (closes its standard input, or SIGTERM for
// a daemon) and waits for it to exit, killing it after 30s.
func (s *Service) Stop() {
	s.stop()
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// PID is the service's process id.
func (s *Service) PID() int { return s.cmd.Process.Pid }

// Logs returns what the service wrote to standard error (the first MiB).
func (s *Service) Logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.String()
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
