package kubernetes

import (
	"context"
	"fmt"
	"path"

	"cairn.dev/cairn/runtime"
	corev1 "k8s.io/api/core/v1"
)

// A container deploy item's exports come back as its container's
// termination message: the pod's terminationMessagePath is the exports
// file the command writes ($CAIRN_EXPORTS), the kubelet copies that file
// into the container's terminated state, and the runtime reads it from
// the pod's status (and keeps it in the unit's Secret once the unit has
// ended). No pods/exec is needed. Kubernetes keeps at most 4 KiB of it.
const (
	// exportsFile is the container deployer's exports file, in the
	// workspace (next to importsFile).
	exportsFile = "exports.json"
	// resultKey holds, in an ended unit's Secret, its termination message.
	resultKey = "result"
	// maxTerminationMessage is what the kubelet keeps of a termination
	// message (kubecontainer.MaxContainerTerminationMessageLength).
	maxTerminationMessage = 4096
)

// resultPath is the terminationMessagePath of a unit's container: its
// exports file for a container deploy item, "" (Kubernetes' default) for
// the others.
func resultPath(info unitInfo) string {
	if info.OwnerKind != kindDeployItem {
		return ""
	}
	return path.Join(workspaceDir, exportsFile)
}

// terminationMessage returns the message the unit's container left when
// it ended, and whether it has ended.
func terminationMessage(pod *corev1.Pod) ([]byte, bool) {
	if pod == nil {
		return nil, false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == containerName && cs.State.Terminated != nil {
			return []byte(cs.State.Terminated.Message), true
		}
	}
	return nil, false
}

// readExports returns the exports a container deploy item's unit left:
// from its Secret once its end is recorded, else from its pod's status.
// Errors: ErrNotFound when it has not ended or left none; ErrInvalid when
// Kubernetes may have cut them (4 KiB or more); the API's.
func (r *Runtime) readExports(ctx context.Context, sec *corev1.Secret) ([]byte, error) {
	id := sec.Annotations[AnnotationID]
	var msg []byte
	if _, ok := recorded(sec); ok {
		msg = sec.Data[resultKey]
	} else {
		pod, err := r.podOf(ctx, sec.Name)
		if err != nil {
			return nil, err
		}
		var ended bool
		if msg, ended = terminationMessage(pod); !ended {
			return nil, fmt.Errorf("%w: %s: unit %s has not ended", runtime.ErrNotFound, exportsFile, id)
		}
	}
	switch {
	case len(msg) == 0:
		return nil, fmt.Errorf("%w: %s: unit %s left none", runtime.ErrNotFound, exportsFile, id)
	case len(msg) >= maxTerminationMessage:
		return nil, fmt.Errorf("%w: %s: the exports of unit %s reach the 4 KiB that Kubernetes keeps of a termination message "+
			"and may be cut: export less on the kubernetes runtime", runtime.ErrInvalid, exportsFile, id)
	}
	return msg, nil
}
