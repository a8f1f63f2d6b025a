package kubernetes

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"cairn.dev/cairn/runtime"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// In a unit's pod.
const (
	// containerName is the unit's one container.
	containerName = "unit"
	// workspaceDir is where the workspace is mounted (Spec.WorkspaceEnv).
	workspaceDir = "/workspace"
	// logKey holds the unit's log in its Secret once the unit has ended.
	logKey = "log"
	// filePrefix starts the Secret keys of the unit's files (f0, f1, ...).
	filePrefix = "f"
	// envPrefix starts the Secret keys of the unit's environment values
	// (e0, e1, ...): the pod's spec names them and holds no value.
	envPrefix = "e"
)

// podOptions are the runtime's settings a pod is built with.
type podOptions struct {
	Namespace   string
	RunAsUser   int64
	GracePeriod int64 // seconds
	Defaults    corev1.ResourceRequirements
}

// unitLabels are the labels of a unit's objects.
func unitLabels(id string, info unitInfo) map[string]string {
	l := map[string]string{LabelUnit: Name(id), LabelManagedBy: "cairn"}
	if info.OwnerKind != "" {
		l[LabelOwnerKind] = info.OwnerKind
		l[LabelOwner] = labelValue(strings.ReplaceAll(info.Owner, "/", "."))
	}
	return l
}

// fileKeys returns the unit's file names in a fixed order: the i-th is
// stored under Secret key filePrefix+i.
func fileKeys(files map[string][]byte) []string {
	return slices.Sorted(maps.Keys(files))
}

// buildSecret returns the Secret of a unit: its files (by key, see
// fileKeys), its labels and its full ID. A non-empty failed is recorded
// as the unit's final state: a unit that fails to start has no pod.
func buildSecret(s runtime.Spec, info unitInfo, o podOptions, failed *runtime.State) *corev1.Secret {
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: Name(s.ID), Namespace: o.Namespace, Labels: unitLabels(s.ID, info),
			Annotations: map[string]string{AnnotationID: s.ID}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{},
	}
	if info.Claim != "" && info.ClaimOwner {
		sec.Annotations[AnnotationClaim] = info.Claim
	}
	if failed != nil {
		maps.Copy(sec.Annotations, recordAnnotations(*failed))
		return sec
	}
	for i, name := range fileKeys(s.Files) {
		sec.Data[filePrefix+strconv.Itoa(i)] = s.Files[name]
	}
	for i, kv := range s.Env {
		_, v, _ := strings.Cut(kv, "=")
		sec.Data[envPrefix+strconv.Itoa(i)] = []byte(v)
	}
	return sec
}

// resources returns the container's requests and limits: the runtime's
// defaults, overridden per resource by r. Errors: a quantity that does not
// parse, naming field and resource.
func resources(r *Resources, field string, defaults corev1.ResourceRequirements) (corev1.ResourceRequirements, error) {
	out := corev1.ResourceRequirements{Requests: maps.Clone(defaults.Requests), Limits: maps.Clone(defaults.Limits)}
	if r == nil {
		return out, nil
	}
	for _, part := range []struct {
		name string
		in   map[string]string
		out  *corev1.ResourceList
	}{{"requests", r.Requests, &out.Requests}, {"limits", r.Limits, &out.Limits}} {
		for k, v := range part.in {
			q, err := resource.ParseQuantity(v)
			if err != nil {
				return out, fmt.Errorf("%s.%s.%s: %q is not a quantity (e.g. 500m, 256Mi)", field, part.name, k, v)
			}
			if *part.out == nil {
				*part.out = corev1.ResourceList{}
			}
			(*part.out)[corev1.ResourceName(k)] = q
		}
	}
	// A request above the default limit would make the pod invalid: the
	// limit follows the request unless the unit sets both.
	for k, req := range out.Requests {
		if lim, ok := out.Limits[k]; ok && req.Cmp(lim) > 0 {
			if r.Limits[string(k)] != "" {
				return out, fmt.Errorf("%s: requests.%s %s exceeds limits.%s %s", field, k, req.String(), k, lim.String())
			}
			out.Limits[k] = req
		}
	}
	return out, nil
}

// buildPod returns the Pod of a unit: its one container runs Argv in the
// image with Env, the workspace an emptyDir at workspaceDir, each file
// mounted read-only from the Secret at its path in the workspace, every
// environment value read from the Secret (the pod's spec holds none); it runs
// as a non-root user without privilege escalation or capabilities, with
// no service account token, and is never restarted.
func buildPod(s runtime.Spec, info unitInfo, res corev1.ResourceRequirements, o podOptions) *corev1.Pod {
	name := Name(s.ID)
	env := make([]corev1.EnvVar, 0, len(s.Env)+1)
	for i, kv := range s.Env {
		k, _, _ := strings.Cut(kv, "=")
		env = append(env, corev1.EnvVar{Name: k, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: envPrefix + strconv.Itoa(i)}}})
	}
	if s.WorkspaceEnv != "" {
		env = append(env, corev1.EnvVar{Name: s.WorkspaceEnv, Value: workspaceDir})
	}
	mounts := []corev1.VolumeMount{{Name: "workspace", MountPath: workspaceDir}}
	for i, f := range fileKeys(s.Files) {
		mounts = append(mounts, corev1.VolumeMount{Name: "files", ReadOnly: true,
			MountPath: path.Join(workspaceDir, path.Clean(f)), SubPath: filePrefix + strconv.Itoa(i)})
	}
	wd := workspaceDir
	if s.Dir != "" {
		wd = path.Join(workspaceDir, path.Clean(s.Dir))
	}
	no, yes := false, true
	mode := int32(0o440)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: unitLabels(s.ID, info),
			Annotations: map[string]string{AnnotationID: s.ID}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			TerminationGracePeriodSeconds: &o.GracePeriod,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &o.RunAsUser,
				RunAsGroup: &o.RunAsUser, FSGroup: &o.RunAsUser,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: containerName, Image: info.Image, Command: s.Argv, Env: env, WorkingDir: wd,
				VolumeMounts: mounts, Resources: res, TerminationMessagePath: resultPath(info),
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no, Privileged: &no,
					RunAsNonRoot: &yes, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
			Volumes: []corev1.Volume{
				{Name: "workspace", VolumeSource: workspaceSource(info)},
				{Name: "files", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: name, DefaultMode: &mode}}},
			},
		},
	}
}

// workspaceSource is the unit's workspace: the event's shared claim, or an
// emptyDir of its own.
func workspaceSource(info unitInfo) corev1.VolumeSource {
	if info.Claim != "" {
		return corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: info.Claim}}
	}
	return corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
}

// buildClaim returns the shared workspace's claim. Errors: a size that is
// not a quantity, naming the field.
func buildClaim(info unitInfo, id string, o podOptions) (*corev1.PersistentVolumeClaim, error) {
	size, err := resource.ParseQuantity(info.Shared.Size)
	if err != nil || size.Sign() <= 0 {
		return nil, fmt.Errorf("the Project's spec.workerTemplate.sharedWorkspace.size %q is not a positive quantity (e.g. 1Gi)", info.Shared.Size)
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: info.Claim, Namespace: o.Namespace, Labels: unitLabels(id, info)},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}}},
	}
	if info.Shared.StorageClassName != "" {
		pvc.Spec.StorageClassName = &info.Shared.StorageClassName
	}
	return pvc, nil
}
