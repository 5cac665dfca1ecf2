package kube

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Process is a child a test or benchmark started and stops by its PID.
type Process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	log    *os.File
}

// StartProcess starts bin with args, its output to logFile.
func StartProcess(logFile, bin string, args ...string) (*Process, error) {
	return StartProcessEnv(logFile, bin, nil, args...)
}

// StartProcessEnv is StartProcess with more environment variables
// ("KEY=value", after and so over this process's own) for the child alone:
// a benchmark's runtime setting (GOMAXPROCS, GOGC) for the process it
// measures, not for the control plane it also starts.
func StartProcessEnv(logFile, bin string, env []string, args ...string) (*Process, error) {
	f, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	p := &Process{cmd: cmd, exited: make(chan struct{}), log: f}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// PID is the process's.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited is closed once the process has ended.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Stop ends the process: SIGTERM, SIGKILL after 15 s.
func (p *Process) Stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	p.log.Close()
}

// Kill ends the process at once (SIGKILL), as a crash or an OOM kill
// would; Stop still closes its log.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}
