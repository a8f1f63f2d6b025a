package kubernetes

import (
	"encoding/json"
	"fmt"
	"strings"

	"cairn.dev/cairn/runtime"
)

// The files by which a unit says what it runs for. Their callers (the
// scheduler and the container deployer) put them in every unit they start;
// reading them here keeps those callers unchanged.
const (
	eventFile   = ".cairn/event.json" // a Brigade worker's or job's event
	importsFile = "imports.json"      // a container deploy item's imports
)

// The owners' kinds, as in the API.
const (
	kindEvent      = "Event"
	kindDeployItem = "DeployItem"
)

// Resources are a container's requests and limits by resource name, as
// Kubernetes quantities: the shape of a WorkerSpec's resources and of a
// container deploy item's config.resources.
type Resources struct {
	Requests map[string]string `json:"requests,omitempty"`
	Limits   map[string]string `json:"limits,omitempty"`
}

// SharedWorkspace is the shape of a WorkerSpec's sharedWorkspace.
type SharedWorkspace struct {
	Size             string `json:"size"`
	StorageClassName string `json:"storageClassName,omitempty"`
}

// workerSpec is what the runtime reads of a WorkerSpec (api.WorkerSpec:
// the package reads the event file's JSON, not the API's types, to stay
// below them).
type workerSpec struct {
	Image           string           `json:"image"`
	Resources       *Resources       `json:"resources"`
	SharedWorkspace *SharedWorkspace `json:"sharedWorkspace"`
}

// eventFileShape is what the runtime reads of an Event.
type eventFileShape struct {
	Metadata struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
		UID       string `json:"uid"`
	} `json:"metadata"`
	Spec struct {
		Worker workerSpec `json:"worker"`
	} `json:"spec"`
	Status struct {
		Jobs []struct {
			Name string     `json:"name"`
			Spec workerSpec `json:"spec"`
		} `json:"jobs"`
	} `json:"status"`
}

// unitInfo is what the runtime learns about a unit from its spec.
type unitInfo struct {
	OwnerKind string // "Event", "DeployItem" or ""
	Owner     string // namespace/name
	Image     string
	// ImageField names where a user sets Image, for the reason a unit
	// without one fails with.
	ImageField string
	Resources  *Resources
	// ResourcesField names where Resources came from.
	ResourcesField string
	// Claim names the PersistentVolumeClaim that is the workspace of an
	// event's worker and jobs, when its Project asks for one; the worker
	// (ClaimOwner) creates it with Shared's size and class.
	Claim      string
	ClaimOwner bool
	Shared     *SharedWorkspace
}

// describe reads what a unit runs for out of its spec: a Brigade unit's
// event file (the worker's spec, or the job's when CAIRN_JOB is set) or a
// container deploy item's imports file (its config's image and
// resources). A spec with neither gives an empty unitInfo. Errors: a file
// that does not decode, naming it.
func describe(s runtime.Spec) (unitInfo, error) {
	env := map[string]string{}
	for _, kv := range s.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	if raw, ok := s.Files[eventFile]; ok {
		var ev eventFileShape
		if err := json.Unmarshal(raw, &ev); err != nil {
			return unitInfo{}, fmt.Errorf("%s does not decode as an Event: %v", eventFile, err)
		}
		info := unitInfo{OwnerKind: kindEvent, Owner: ev.Metadata.Namespace + "/" + ev.Metadata.Name}
		ws := ev.Spec.Worker
		info.ImageField, info.ResourcesField = "the Project's spec.workerTemplate.image", "the Project's spec.workerTemplate.resources"
		if job := env["CAIRN_JOB"]; job != "" {
			ws = workerSpec{}
			for _, j := range ev.Status.Jobs {
				if j.Name == job {
					ws = j.Spec
				}
			}
			info.ImageField = fmt.Sprintf("the image of job %q", job)
			info.ResourcesField = fmt.Sprintf("the resources of job %q", job)
		}
		info.Image, info.Resources = ws.Image, ws.Resources
		if sw := ev.Spec.Worker.SharedWorkspace; sw != nil {
			info.Claim, info.ClaimOwner, info.Shared = Name("ws-"+ev.Metadata.UID), env["CAIRN_JOB"] == "", sw
		}
		return info, nil
	}
	if raw, ok := s.Files[importsFile]; ok {
		var imp struct {
			Config struct {
				Image     string     `json:"image"`
				Resources *Resources `json:"resources"`
			} `json:"config"`
		}
		if err := json.Unmarshal(raw, &imp); err != nil {
			return unitInfo{}, fmt.Errorf("%s does not decode: %v", importsFile, err)
		}
		return unitInfo{OwnerKind: kindDeployItem, Owner: env["CAIRN_NAMESPACE"] + "/" + env["CAIRN_DEPLOYITEM"],
			Image: imp.Config.Image, ImageField: "the deploy item's spec.config.image",
			Resources: imp.Config.Resources, ResourcesField: "the deploy item's spec.config.resources"}, nil
	}
	return unitInfo{ImageField: "an image"}, nil
}
