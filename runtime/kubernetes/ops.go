package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"cairn.dev/cairn/runtime"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var _ runtime.Runtime = (*Runtime)(nil)

// apiErr wraps an error of the cluster's API with what the runtime was
// doing; a refused permission names the Role to grant.
func apiErr(what string, err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("runtime kubernetes: %s: %v (grant the Role in %s)", what, err, DefaultRole)
	}
	return fmt.Errorf("runtime kubernetes: %s: %w", what, err)
}

// Start creates the unit's Secret, then its Pod. A unit without an image
// (its own or Options.DefaultImage), or with resources that do not parse,
// is recorded as Failed with the reason and has no pod. See
// runtime.Runtime.
func (r *Runtime) Start(ctx context.Context, s runtime.Spec) (runtime.State, error) {
	if err := runtime.ValidateSpec(s); err != nil {
		return runtime.State{}, err
	}
	if err := r.ready(ctx); err != nil {
		return runtime.State{}, err
	}
	info, err := describe(s)
	var res corev1.ResourceRequirements
	if err == nil {
		res, err = resources(info.Resources, info.ResourcesField, r.opts.Defaults)
	}
	var claim *corev1.PersistentVolumeClaim
	if err == nil && info.Claim != "" && info.ClaimOwner {
		claim, err = buildClaim(info, s.ID, r.pod)
	}
	if info.Image == "" {
		info.Image = r.opts.DefaultImage
	}
	now := time.Now()
	var failed *runtime.State
	switch {
	case err != nil:
		failed = &runtime.State{Phase: runtime.PhaseFailed, Reason: err.Error(), Started: now, Ended: now}
	case info.Image == "":
		failed = &runtime.State{Phase: runtime.PhaseFailed, Started: now, Ended: now,
			Reason: "no image to run: the kubernetes runtime needs " + info.ImageField + " (or --runtime-default-image)"}
	}
	sec := buildSecret(s, info, r.pod, failed)
	// Until its pod is created, the unit is Pending, not Lost.
	r.mu.Lock()
	r.starting[sec.Name] = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.starting, sec.Name)
		r.mu.Unlock()
	}()
	if _, err := r.cs.CoreV1().Secrets(r.opts.Namespace).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			st, _ := r.State(ctx, s.ID)
			return st, fmt.Errorf("%w: %s", runtime.ErrExists, s.ID)
		}
		return runtime.State{}, apiErr("create the secret of "+s.ID, err)
	}
	if failed != nil {
		r.log.Info("unit failed to start", "id", s.ID, "reason", failed.Reason)
		return *failed, nil
	}
	if claim != nil {
		_, err := r.cs.CoreV1().PersistentVolumeClaims(r.opts.Namespace).Create(ctx, claim, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			_ = r.cs.CoreV1().Secrets(r.opts.Namespace).Delete(context.WithoutCancel(ctx), sec.Name, metav1.DeleteOptions{})
			return runtime.State{}, apiErr("create the shared workspace of "+s.ID, err)
		}
	}
	pod := buildPod(s, info, res, r.pod)
	if _, err := r.cs.CoreV1().Pods(r.opts.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		if apierrors.IsInvalid(err) {
			st := runtime.State{Phase: runtime.PhaseFailed, Reason: "the cluster refuses the pod: " + err.Error(), Started: now, Ended: now}
			return st, r.record(ctx, sec.Name, st, nil, nil)
		}
		if apierrors.IsAlreadyExists(err) {
			return runtime.State{}, fmt.Errorf("%w: %s has a pod already", runtime.ErrExists, s.ID)
		}
		// Nothing started: free the ID so that a retry can start it.
		_ = r.cs.CoreV1().Secrets(r.opts.Namespace).Delete(context.WithoutCancel(ctx), sec.Name, metav1.DeleteOptions{})
		return runtime.State{}, apiErr("create the pod of "+s.ID, err)
	}
	r.log.Info("unit started", "id", s.ID, "pod", pod.Name, "image", info.Image)
	return runtime.State{Phase: runtime.PhasePending, Started: now}, nil
}

// secret returns the unit's Secret from the cache, or from the cluster
// when the cache has not seen it yet. Errors: ErrNotFound, the API's.
func (r *Runtime) secret(ctx context.Context, id string) (*corev1.Secret, error) {
	if err := runtime.ValidateID(id); err != nil {
		return nil, fmt.Errorf("%w: %s", runtime.ErrNotFound, id)
	}
	if err := r.ready(ctx); err != nil {
		return nil, err
	}
	name := Name(id)
	sec, err := r.secrets.Get(name)
	if apierrors.IsNotFound(err) {
		sec, err = r.cs.CoreV1().Secrets(r.opts.Namespace).Get(ctx, name, metav1.GetOptions{})
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%w: %s", runtime.ErrNotFound, id)
	case err != nil:
		return nil, apiErr("read the secret of "+id, err)
	case sec.Annotations[AnnotationID] != id:
		return nil, fmt.Errorf("%w: %s (its name is taken by %q)", runtime.ErrNotFound, id, sec.Annotations[AnnotationID])
	}
	return sec, nil
}

// podOf returns the unit's pod from the cache or, when the cache has none,
// from the cluster (a pod just created may not be in the cache yet); nil
// when there is none.
func (r *Runtime) podOf(ctx context.Context, name string) (*corev1.Pod, error) {
	pod, err := r.pods.Get(name)
	if apierrors.IsNotFound(err) {
		pod, err = r.cs.CoreV1().Pods(r.opts.Namespace).Get(ctx, name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, apiErr("read pod "+name, err)
	}
	return pod, nil
}

// observe returns the unit's state and pod: its recorded final state, or
// what its pod shows. A unit seen ended for the first time is recorded
// (finish).
func (r *Runtime) observe(ctx context.Context, sec *corev1.Secret) (runtime.State, *corev1.Pod, error) {
	if st, ok := recorded(sec); ok {
		return st, nil, nil
	}
	pod, err := r.podOf(ctx, sec.Name)
	if err != nil {
		return runtime.State{}, nil, err
	}
	if pod == nil && r.isStarting(sec.Name) {
		return runtime.State{Phase: runtime.PhasePending, Started: sec.CreationTimestamp.Time}, nil, nil
	}
	st := podState(pod)
	if pod == nil {
		st.Started = sec.CreationTimestamp.Time
		st.Ended = time.Now()
	}
	if st.Phase.Done() {
		if err := r.finish(ctx, sec, pod, st); err != nil {
			r.log.Warn("could not record the end of a unit", "id", sec.Annotations[AnnotationID], "err", err)
		}
	}
	return st, pod, nil
}

// isStarting reports whether this runtime is creating the unit's objects.
func (r *Runtime) isStarting(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.starting[name]
}

// State returns the unit's state. See runtime.Runtime.
func (r *Runtime) State(ctx context.Context, id string) (runtime.State, error) {
	sec, err := r.secret(ctx, id)
	if err != nil {
		return runtime.State{}, err
	}
	st, _, err := r.observe(ctx, sec)
	return st, err
}

// Wait blocks until the unit has ended. See runtime.Runtime.
func (r *Runtime) Wait(ctx context.Context, id string) (runtime.State, error) {
	for {
		ch := r.changes()
		st, err := r.State(ctx, id)
		if err != nil || st.Phase.Done() {
			return st, err
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-r.stop:
			return st, runtime.ErrClosed
		case <-ch:
		}
	}
}

// List returns every unit of the namespace. See runtime.Runtime.
func (r *Runtime) List(ctx context.Context) ([]runtime.Unit, error) {
	if err := r.ready(ctx); err != nil {
		return nil, err
	}
	secs, err := r.secrets.List(everything)
	if err != nil {
		return nil, apiErr("list secrets", err)
	}
	var out []runtime.Unit
	for _, sec := range secs {
		id := sec.Annotations[AnnotationID]
		if id == "" {
			continue
		}
		st, _, err := r.observe(ctx, sec)
		if err != nil {
			return nil, err
		}
		out = append(out, runtime.Unit{ID: id, State: st})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Kill deletes the unit's pod with the grace period, then at once if it
// is still there after it, and records how it ended with its log. See
// runtime.Runtime.
func (r *Runtime) Kill(ctx context.Context, id string) error {
	sec, err := r.secret(ctx, id)
	if err != nil {
		return err
	}
	st, pod, err := r.observe(ctx, sec)
	if err != nil || st.Phase.Done() {
		return err
	}
	logs := r.followLogs(ctx, pod)
	pods := r.cs.CoreV1().Pods(r.opts.Namespace)
	grace := r.pod.GracePeriod
	pre := metav1.NewUIDPreconditions(string(pod.UID))
	if err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace, Preconditions: pre}); err != nil && !apierrors.IsNotFound(err) {
		return apiErr("delete the pod of "+id, err)
	}
	last, err := r.waitGone(ctx, pod.Name, pod.UID, r.opts.KillGrace+time.Second)
	if err != nil {
		return err
	}
	if last != nil {
		zero := int64(0)
		if err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: pre}); err != nil && !apierrors.IsNotFound(err) {
			return apiErr("force the deletion of the pod of "+id, err)
		}
		if _, err := r.waitGone(ctx, pod.Name, pod.UID, 0); err != nil {
			return err
		}
	} else {
		last = pod
	}
	end := podState(last)
	if end.Phase != runtime.PhaseExited {
		end = runtime.State{Phase: runtime.PhaseExited, ExitCode: 137, Reason: "killed by cairn: the pod was deleted", Started: st.Started}
	}
	if end.Ended.IsZero() {
		end.Ended = time.Now()
	}
	return r.record(ctx, sec.Name, end, logs.wait(time.Second), nil)
}

// waitGone blocks until the pod with uid is gone, or within (when not 0)
// has passed; it returns the pod as last seen if it is still there.
// Errors: ctx.Err(), ErrClosed.
func (r *Runtime) waitGone(ctx context.Context, name string, uid types.UID, within time.Duration) (*corev1.Pod, error) {
	var deadline <-chan time.Time
	if within > 0 {
		t := time.NewTimer(within)
		defer t.Stop()
		deadline = t.C
	}
	for {
		ch := r.changes()
		pod, err := r.pods.Get(name)
		if apierrors.IsNotFound(err) || (err == nil && pod.UID != uid) {
			return nil, nil
		}
		select {
		case <-ctx.Done():
			return pod, ctx.Err()
		case <-r.stop:
			return pod, runtime.ErrClosed
		case <-deadline:
			return pod, nil
		case <-ch:
		case <-time.After(time.Second):
		}
	}
}

// Cleanup kills the unit if it runs, records its end and deletes its pod;
// its Secret keeps the state and log. See runtime.Runtime.
func (r *Runtime) Cleanup(ctx context.Context, id string) error {
	if err := r.Kill(ctx, id); err != nil {
		return err
	}
	if err := r.deletePod(ctx, id); err != nil {
		return err
	}
	return r.deleteClaim(ctx, id)
}

// deleteClaim deletes the shared workspace a worker's unit created; the
// cluster keeps it until its jobs' pods are gone too.
func (r *Runtime) deleteClaim(ctx context.Context, id string) error {
	sec, err := r.secret(ctx, id)
	if err != nil || sec.Annotations[AnnotationClaim] == "" {
		return err
	}
	err = r.cs.CoreV1().PersistentVolumeClaims(r.opts.Namespace).Delete(ctx, sec.Annotations[AnnotationClaim], metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return apiErr("delete the shared workspace of "+id, err)
	}
	return nil
}

// deletePod deletes the unit's pod at once and waits until it is gone.
func (r *Runtime) deletePod(ctx context.Context, id string) error {
	name := Name(id)
	pod, err := r.podOf(ctx, name)
	if err != nil || pod == nil {
		return err
	}
	zero := int64(0)
	err = r.cs.CoreV1().Pods(r.opts.Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if err != nil && !apierrors.IsNotFound(err) {
		return apiErr("delete the pod of "+id, err)
	}
	_, err = r.waitGone(ctx, name, pod.UID, 0)
	return err
}

// Remove kills the unit if it runs and deletes its pod and Secret. See
// runtime.Runtime.
func (r *Runtime) Remove(ctx context.Context, id string) error {
	sec, err := r.secret(ctx, id)
	if err != nil {
		return err
	}
	if err := r.Cleanup(ctx, id); err != nil && !errors.Is(err, runtime.ErrNotFound) {
		return err
	}
	err = r.cs.CoreV1().Secrets(r.opts.Namespace).Delete(ctx, sec.Name, metav1.DeleteOptions{
		Preconditions: metav1.NewUIDPreconditions(string(sec.UID))})
	if err != nil && !apierrors.IsNotFound(err) {
		return apiErr("delete the secret of "+id, err)
	}
	// Until the cache has seen the deletion, State would still find it.
	for {
		ch := r.changes()
		if cur, err := r.secrets.Get(sec.Name); apierrors.IsNotFound(err) || (err == nil && cur.UID != sec.UID) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.stop:
			return runtime.ErrClosed
		case <-ch:
		case <-time.After(time.Second):
		}
	}
	r.log.Info("unit removed", "id", id)
	return nil
}

// ReadFile reads what a container deploy item's unit exported (the
// file exports.json, its $CAIRN_EXPORTS), which comes back as its
// container's termination message (exports.go). Other files of a pod's
// workspace cannot be read without exec rights, which the runtime does
// not ask for: it returns ErrNotFound for them, as for a file the unit
// did not write.
func (r *Runtime) ReadFile(ctx context.Context, id, name string) ([]byte, error) {
	clean, err := runtime.ValidateRelPath("name", name)
	if err != nil {
		return nil, err
	}
	sec, err := r.secret(ctx, id)
	if err != nil {
		return nil, err
	}
	if clean == exportsFile && sec.Labels[LabelOwnerKind] == kindDeployItem {
		return r.readExports(ctx, sec)
	}
	return nil, fmt.Errorf("%w: %s: the kubernetes runtime cannot read files of a pod's workspace", runtime.ErrNotFound, name)
}
