package kubetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// defaultPath is a container's PATH when its pod sets none (the image,
// which would, is ignored).
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// maxTerminationMessage is the most of a termination message a kubelet
// keeps.
const maxTerminationMessage = 4096

// podProcess is how Exec runs a pod's one container on this machine.
type podProcess struct {
	argv    []string
	env     []string
	dir     string // the working directory, on this machine
	termMsg string // the termination message file, on this machine
}

// podFS maps a container's paths to this machine's: every mount path
// (and the working directory and termination message file) lies under
// rootfs, the pod's own directory, so that pods that mount the same path
// (every unit's /workspace) run side by side; any other path is this
// machine's own, which stands in for the image.
type podFS struct {
	rootfs string
	mounts []string // the container's mount paths
}

// host is p, a container's absolute path, under the pod's rootfs.
func (f podFS) host(p string) string { return filepath.Join(f.rootfs, filepath.Clean("/"+p)) }

// mapped is p on this machine: under rootfs when a mount holds it, else p
// itself.
func (f podFS) mapped(p string) string {
	for _, m := range f.mounts {
		if p == m || strings.HasPrefix(p, strings.TrimSuffix(m, "/")+"/") {
			return f.host(p)
		}
	}
	return p
}

// prepare lays out the pod's volumes and mounts under dir and returns its
// container's process: argv (command and args, the command looked up in
// the pod's PATH on this machine), the environment (values from Secrets
// read through the API; a literal value that is a mounted path is mapped
// like the path), the working directory and the termination message file
// (created empty, as a kubelet does). Errors: what Exec does not play (more
// than one container, no command, a volume other than emptyDir, secret or
// persistentVolumeClaim, envFrom, a value from elsewhere than a Secret) or
// what a kubelet would refuse (a missing Secret or key), naming it.
func (x *execer) prepare(ctx context.Context, dir string, pod *corev1.Pod) (*podProcess, error) {
	if len(pod.Spec.Containers) != 1 || len(pod.Spec.InitContainers) > 0 {
		return nil, fmt.Errorf("pod %s: Exec plays pods of exactly one container", pod.Name)
	}
	c := pod.Spec.Containers[0]
	if len(c.Command) == 0 {
		return nil, fmt.Errorf("container %s: Exec runs no image's entrypoint: give the container a command", c.Name)
	}
	if len(c.EnvFrom) > 0 {
		return nil, fmt.Errorf("container %s: envFrom is not played by Exec", c.Name)
	}
	fs := podFS{rootfs: filepath.Join(dir, "rootfs")}
	for _, m := range c.VolumeMounts {
		fs.mounts = append(fs.mounts, filepath.Clean(m.MountPath))
	}
	if err := x.mount(ctx, dir, pod, c.VolumeMounts, fs); err != nil {
		return nil, err
	}
	env, err := x.environment(ctx, pod.Namespace, c.Env, fs)
	if err != nil {
		return nil, err
	}
	p := &podProcess{argv: append(slices.Clone(c.Command), c.Args...), env: env, dir: fs.rootfs}
	if c.WorkingDir != "" {
		p.dir = fs.host(c.WorkingDir)
	}
	p.argv[0] = fs.mapped(p.argv[0])
	if p.argv[0], err = lookPath(p.argv[0], env); err != nil {
		return nil, fmt.Errorf("container %s: %w", c.Name, err)
	}
	term := c.TerminationMessagePath
	if term == "" {
		term = corev1.TerminationMessagePathDefault
	}
	p.termMsg = fs.host(term)
	for _, d := range []string{p.dir, filepath.Dir(p.termMsg)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(p.termMsg, nil, 0o666); err != nil {
		return nil, err
	}
	return p, nil
}

// mount makes each mount path (mapped by fs) a symbolic link to its
// volume's directory (or the subPath in it), parents first, as nested
// mounts are.
func (x *execer) mount(ctx context.Context, dir string, pod *corev1.Pod, mounts []corev1.VolumeMount, fs podFS) error {
	mounts = slices.Clone(mounts)
	slices.SortStableFunc(mounts, func(a, b corev1.VolumeMount) int {
		return len(filepath.Clean(a.MountPath)) - len(filepath.Clean(b.MountPath))
	})
	vols := map[string]string{} // volume name -> its directory
	for _, m := range mounts {
		src, ok := vols[m.Name]
		if !ok {
			var err error
			if src, err = x.volume(ctx, dir, pod, m.Name); err != nil {
				return err
			}
			vols[m.Name] = src
		}
		if m.SubPath != "" {
			src = filepath.Join(src, filepath.Clean("/"+m.SubPath))
		}
		dst := fs.host(m.MountPath)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(src, dst); err != nil {
			return fmt.Errorf("mount %s at %s: %w", m.Name, m.MountPath, err)
		}
	}
	return nil
}

// volume returns the directory of the pod's volume name: an emptyDir's
// own, a Secret's keys as files (with the volume's modes), or one per
// PersistentVolumeClaim that every pod naming it shares.
func (x *execer) volume(ctx context.Context, dir string, pod *corev1.Pod, name string) (string, error) {
	i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == name })
	if i < 0 {
		return "", fmt.Errorf("pod %s mounts volume %s, which it does not declare", pod.Name, name)
	}
	v := pod.Spec.Volumes[i]
	switch {
	case v.EmptyDir != nil:
		d := filepath.Join(dir, "volumes", name)
		return d, os.MkdirAll(d, 0o777)
	case v.PersistentVolumeClaim != nil:
		d := filepath.Join(x.root, "claims", pod.Namespace, v.PersistentVolumeClaim.ClaimName)
		return d, os.MkdirAll(d, 0o777)
	case v.Secret != nil:
		d := filepath.Join(dir, "volumes", name)
		return d, x.secretFiles(ctx, pod.Namespace, v.Secret, d)
	}
	return "", fmt.Errorf("volume %s of pod %s: Exec plays emptyDir, secret and persistentVolumeClaim volumes only", name, pod.Name)
}

// secretFiles writes the Secret's keys (or the volume's items) into d,
// each with its mode (the item's, the volume's defaultMode, or 0644).
func (x *execer) secretFiles(ctx context.Context, ns string, v *corev1.SecretVolumeSource, d string) error {
	sec, err := x.cs.CoreV1().Secrets(ns).Get(ctx, v.SecretName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("secret volume %s: %w", v.SecretName, err)
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	mode := int32(0o644)
	if v.DefaultMode != nil {
		mode = *v.DefaultMode
	}
	items := v.Items
	if len(items) == 0 {
		for k := range sec.Data {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
	}
	for _, it := range items {
		b, ok := sec.Data[it.Key]
		if !ok {
			return fmt.Errorf("secret volume %s has no key %s", v.SecretName, it.Key)
		}
		m := mode
		if it.Mode != nil {
			m = *it.Mode
		}
		p := filepath.Join(d, filepath.Clean("/"+it.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, os.FileMode(m)); err != nil {
			return err
		}
	}
	return nil
}

// environment returns the container's environment as KEY=value: literal
// values (a mounted path mapped by fs) and values from Secrets.
func (x *execer) environment(ctx context.Context, ns string, vars []corev1.EnvVar, fs podFS) ([]string, error) {
	secrets := map[string]*corev1.Secret{}
	var env []string
	for _, v := range vars {
		if v.ValueFrom == nil {
			val := v.Value
			if filepath.IsAbs(val) {
				val = fs.mapped(val)
			}
			env = append(env, v.Name+"="+val)
			continue
		}
		ref := v.ValueFrom.SecretKeyRef
		if ref == nil {
			return nil, fmt.Errorf("env %s: Exec plays values from Secrets only", v.Name)
		}
		sec, ok := secrets[ref.Name]
		if !ok {
			var err error
			if sec, err = x.cs.CoreV1().Secrets(ns).Get(ctx, ref.Name, metav1.GetOptions{}); err != nil {
				return nil, fmt.Errorf("env %s: secret %s: %w", v.Name, ref.Name, err)
			}
			secrets[ref.Name] = sec
		}
		b, ok := sec.Data[ref.Key]
		if !ok {
			if ref.Optional != nil && *ref.Optional {
				continue
			}
			return nil, fmt.Errorf("env %s: secret %s has no key %s", v.Name, ref.Name, ref.Key)
		}
		env = append(env, v.Name+"="+string(b))
	}
	return env, nil
}

// lookPath finds name in the PATH of env (defaultPath when it sets none)
// on this machine, as a container runtime looks up a command in the
// image; a name with a slash is taken as it is.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := defaultPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New(name + ": executable file not found in $PATH " + path)
}
