package kubetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// execer runs pods as local processes for a Kubelet (Exec).
type execer struct {
	k    *Kubelet
	cs   kubernetes.Interface
	root string // every pod's directory, and the claims', lie under it

	mu      sync.Mutex
	closing bool
	running sync.WaitGroup
}

// Exec runs every pod created in namespace ns from now until ctx ends (or
// the test ends) as a kubelet would, as far as a test needs the pod's own
// command to really run, as a process on this machine:
//
//   - argv is the container's command and args, the command looked up in
//     the pod's PATH; the environment is the container's env only, values
//     from Secrets read through the API;
//   - the volumes (emptyDir, secret with its modes, persistentVolumeClaim:
//     a directory every pod naming the claim shares) are directories under
//     a temporary root, and every mount path is a symbolic link under the
//     pod's own root to its volume (or subPath): mount paths are absolute
//     and shared by pods that run side by side (every unit mounts
//     /workspace), so none is made on this machine itself (a mount inside
//     a claim's directory that another pod made already fails the pod with
//     StartError: unit files in a shared workspace are not played). An env value
//     or the command that is a mounted path, the working directory and the
//     termination message file are mapped under the pod's root the same
//     way;
//   - the pod is bound and Running while the process runs, then Succeeded
//     or Failed with the process's exit code (128+N for signal N) and the
//     termination message file's first 4096 bytes as the container's
//     terminated state; a pod that cannot be set up ends at once with exit
//     code 128, reason StartError and the cause as its message;
//   - its output (stdout and stderr) is the container's log, served on the
//     node's log endpoint that the apiserver proxies pods/log to, followed
//     to the end while the process runs;
//   - a pod being deleted has its process group stopped (SIGTERM, SIGKILL
//     after the pod's grace period), then its deletion confirmed.
//
// The image, the security context (user, capabilities) and the resources
// are ignored: this machine stands in for the image, and the process runs
// as the test's user. Exec does not block; failures of the API are
// reported through t.Errorf unless ctx has ended. At test cleanup it stops
// every process and waits for them before the root is removed.
func (k *Kubelet) Exec(ctx context.Context, ns string) {
	k.c.t.Helper()
	x := &execer{k: k, cs: k.c.Clientset(), root: k.c.t.TempDir()}
	ctx, cancel := context.WithCancel(ctx)
	k.c.t.Cleanup(func() {
		cancel()
		x.mu.Lock()
		x.closing = true
		x.mu.Unlock()
		x.running.Wait()
	})
	k.play(ctx, ns, x.run)
}

// run runs the pod's process until it ends, is stopped or ctx ends, and
// returns the container's end. It blocks.
func (x *execer) run(ctx context.Context, pod *corev1.Pod) corev1.ContainerStateTerminated {
	x.mu.Lock()
	if x.closing {
		x.mu.Unlock()
		return corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error", Message: "the test ended"}
	}
	x.running.Add(1)
	x.mu.Unlock()
	defer x.running.Done()

	out := newLogStream()
	defer out.end()
	x.k.mu.Lock()
	x.k.streams[pod.Namespace+"/"+pod.Name] = out
	x.k.mu.Unlock()

	dir := filepath.Join(x.root, "pods", pod.Namespace, pod.Name+"-"+string(pod.UID))
	p, err := x.prepare(ctx, dir, pod)
	if err != nil {
		fmt.Fprintf(out, "kubetest: %v\n", err)
		return corev1.ContainerStateTerminated{ExitCode: 128, Reason: "StartError", Message: err.Error()}
	}
	code, err := x.start(ctx, pod, p, out)
	if err != nil {
		fmt.Fprintf(out, "kubetest: %v\n", err)
		return corev1.ContainerStateTerminated{ExitCode: 128, Reason: "StartError", Message: err.Error()}
	}
	msg, _ := readUpTo(p.termMsg, maxTerminationMessage)
	return corev1.ContainerStateTerminated{ExitCode: code, Message: msg}
}

// start runs p in a process group of its own, its output to out, until
// it exits; a deletion of the pod (stopPod) or the end of ctx stops it.
// It returns the exit code. Errors: the process could not start.
func (x *execer) start(ctx context.Context, pod *corev1.Pod, p *podProcess, out io.Writer) (int32, error) {
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = p.env, p.dir, out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second // a child left holding the output
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	exited := make(chan struct{})
	grace := 30 * time.Second
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(grace):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
		})
		<-exited
	}
	x.k.mu.Lock()
	x.k.stops[pod.UID] = stop
	x.k.mu.Unlock()
	go func() {
		select {
		case <-ctx.Done():
			stop()
		case <-exited:
		}
	}()
	err := cmd.Wait()
	close(exited)
	x.k.mu.Lock()
	delete(x.k.stops, pod.UID)
	x.k.mu.Unlock()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int32(ws.Signal()), nil
		}
		return int32(ee.ExitCode()), nil
	}
	return 1, nil // the output could not be copied (WaitDelay): the process has ended
}

// stopPod stops the process Exec runs for the pod, if any, and returns
// once it has exited.
func (k *Kubelet) stopPod(uid types.UID) {
	k.mu.Lock()
	stop := k.stops[uid]
	k.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// readUpTo returns the first n bytes of the file at path.
func readUpTo(path string, n int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, n))
	return string(b), err
}
