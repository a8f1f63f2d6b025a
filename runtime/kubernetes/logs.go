package kubernetes

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"time"

	"cairn.dev/cairn/conflict"
	"cairn.dev/cairn/runtime"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

var everything = labels.Everything()

// finish records the end of a unit seen ended (st) with its log read from
// the pod (when there is one on a node). Several callers seeing the same
// end record it once. Errors: the record could not be written.
func (r *Runtime) finish(ctx context.Context, sec *corev1.Secret, pod *corev1.Pod, st runtime.State) error {
	r.mu.Lock()
	if r.finishing[sec.Name] {
		r.mu.Unlock()
		return nil
	}
	r.finishing[sec.Name] = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.finishing, sec.Name)
		r.mu.Unlock()
	}()
	var log []byte
	if pod != nil && pod.Spec.NodeName != "" {
		rc, err := r.cs.CoreV1().Pods(r.opts.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: containerName}).Stream(ctx)
		if err == nil {
			log = r.readTail(rc)
		} else {
			r.log.Warn("could not read the log of an ended unit", "id", sec.Annotations[AnnotationID], "err", err)
			log = fmt.Appendf(nil, "[cairn: the log could not be read from the cluster: %v]\n", err)
		}
	}
	result, _ := terminationMessage(pod)
	return r.record(ctx, sec.Name, st, log, result)
}

// readTail reads rc to its end (or an error) and closes it, keeping the
// last MaxLogBytes.
func (r *Runtime) readTail(rc io.ReadCloser) []byte {
	defer rc.Close()
	var buf []byte
	chunk := make([]byte, 32<<10)
	cut := false
	for {
		n, err := rc.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if len(buf) > 2*r.opts.MaxLogBytes {
			buf, cut = append([]byte(nil), buf[len(buf)-r.opts.MaxLogBytes:]...), true
		}
		if err != nil {
			break
		}
	}
	if len(buf) > r.opts.MaxLogBytes {
		buf, cut = buf[len(buf)-r.opts.MaxLogBytes:], true
	}
	if cut {
		buf = append([]byte("[cairn: the log's beginning was cut]\n"), buf...)
	}
	return buf
}

// record writes st, log and the container's termination message
// (result, when any) on the unit's Secret (named name) unless it holds a
// final state already, and drops the files and environment the ended pod
// no longer needs. It reads the Secret again and retries on a Conflict
// (conflict.RetryIf). Errors: the API's (a Secret that is gone is not
// one).
func (r *Runtime) record(ctx context.Context, name string, st runtime.State, log, result []byte) error {
	secrets := r.cs.CoreV1().Secrets(r.opts.Namespace)
	sec, err := r.secrets.Get(name)
	first := err == nil
	return conflict.RetryIf(ctx, apierrors.IsConflict, func() error {
		if !first {
			sec, err = secrets.Get(ctx, name, metav1.GetOptions{})
		}
		first = false
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return apiErr("read the secret "+name, err)
		}
		if _, ok := recorded(sec); ok {
			return nil
		}
		s := sec.DeepCopy()
		maps.Copy(s.Annotations, recordAnnotations(st))
		s.Data = map[string][]byte{logKey: log}
		if len(result) > 0 {
			s.Data[resultKey] = result
		}
		if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			return apiErr("record the end of "+s.Annotations[AnnotationID], err)
		}
		r.log.Info("unit ended", "id", s.Annotations[AnnotationID], "phase", st.Phase, "exitCode", st.ExitCode, "reason", st.Reason)
		return nil
	})
}

// logCollector is a log followed while a pod is deleted.
type logCollector struct {
	done chan struct{}
	log  []byte
}

// followLogs starts reading the pod's log, following it, in the
// background; wait returns what was read once the stream ends. A pod not
// on a node has no log: wait returns nil at once.
func (r *Runtime) followLogs(ctx context.Context, pod *corev1.Pod) *logCollector {
	c := &logCollector{done: make(chan struct{})}
	if pod == nil || pod.Spec.NodeName == "" {
		close(c.done)
		return c
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.KillGrace+5*time.Second)
	go func() {
		defer close(c.done)
		defer cancel()
		rc, err := r.cs.CoreV1().Pods(r.opts.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: containerName, Follow: true}).Stream(sctx)
		if err != nil {
			c.log = fmt.Appendf(nil, "[cairn: the log could not be read from the cluster: %v]\n", err)
			return
		}
		c.log = r.readTail(rc)
	}()
	return c
}

// wait returns the log read, waiting at most d for the stream to end.
func (c *logCollector) wait(d time.Duration) []byte {
	select {
	case <-c.done:
		return c.log
	case <-time.After(d):
		return []byte("[cairn: the log was still being read when the unit was killed]\n")
	}
}

// Logs returns the unit's log: the recorded one once it has ended, the
// pod log API's before. See runtime.Runtime.
func (r *Runtime) Logs(ctx context.Context, id string, opts runtime.LogOptions) (io.ReadCloser, error) {
	for {
		ch := r.changes()
		sec, err := r.secret(ctx, id)
		if err != nil {
			return nil, err
		}
		st, pod, err := r.observe(ctx, sec)
		if err != nil {
			return nil, err
		}
		if st.Phase.Done() {
			// Read the record from the API, not the cache: it may have
			// just been written (by observe, when the pod was there), or
			// the cache may not show it yet while the pod is already gone.
			if sec, err = r.cs.CoreV1().Secrets(r.opts.Namespace).Get(ctx, sec.Name, metav1.GetOptions{}); err != nil {
				return nil, apiErr("read the log of "+id, err)
			}
			return io.NopCloser(bytes.NewReader(sec.Data[logKey])), nil
		}
		if pod != nil && pod.Spec.NodeName != "" && st.Phase == runtime.PhaseRunning {
			rc, err := r.cs.CoreV1().Pods(r.opts.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: containerName, Follow: opts.Follow}).Stream(ctx)
			if err == nil {
				return rc, nil
			}
			r.log.Debug("pod log not available yet", "id", id, "err", err)
		}
		if !opts.Follow {
			return io.NopCloser(bytes.NewReader(nil)), nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-r.stop:
			return nil, runtime.ErrClosed
		case <-ch:
		case <-time.After(time.Second):
		}
	}
}
