package api

import (
	"encoding/json"
	"time"
)

// The deployment kinds: a Blueprint describes what to deploy; an
// Installation applies one to its imports, rendering an Execution (and
// nested Installations); an Execution keeps its DeployItems in line with
// its spec; deployers act on DeployItems. DataObjects and Targets carry the
// data that flows between them.

// Annotations of the deployment kinds.
const (
	// AnnotationOperation asks for an operation: one of the Operation*
	// values. The controller that carries it out removes it.
	AnnotationOperation = "cairn.dev/operation"
	// AnnotationIgnore: "true" makes the controllers leave an object in a
	// final phase alone.
	AnnotationIgnore = "cairn.dev/ignore"
	// AnnotationDeleteWithoutUninstall: "true" makes a deletion remove the
	// finalizers without running the deployer's uninstall (the way out
	// when a target is gone).
	AnnotationDeleteWithoutUninstall = "cairn.dev/delete-without-uninstall"
	// AnnotationReconcileTime is written on a deploy item by the execution
	// controller when it creates or updates it (RFC 3339): the base of the
	// pickup timeout.
	AnnotationReconcileTime = "cairn.dev/reconcile-time"
	// AnnotationAbortTime is when an abort was asked for (RFC 3339): the
	// base of the aborting timeout.
	AnnotationAbortTime = "cairn.dev/abort-time"
	// AnnotationAbortTimeout marks an abort asked for by the progressing
	// timeout.
	AnnotationAbortTimeout = "cairn.dev/abort-timeout"
)

// The values of AnnotationOperation.
const (
	OperationReconcile      = "reconcile"
	OperationForceReconcile = "force-reconcile"
	OperationAbort          = "abort"
)

// Finalizers of the deployment controllers.
const (
	FinalizerInstallation = "cairn.dev/installation"
	FinalizerExecution    = "cairn.dev/execution"
	FinalizerDeployer     = "cairn.dev/deployer"
)

// Labels the deployment controllers put on the objects they create.
const (
	// LabelExecution names the Execution that manages a DeployItem.
	LabelExecution = "cairn.dev/execution"
	// LabelDeployItemName is the deploy item's name in its execution's spec.
	LabelDeployItemName = "cairn.dev/deployitem-name"
	// LabelInstallation names the Installation that owns an object (an
	// Execution, a nested Installation, an exported DataObject).
	LabelInstallation = "cairn.dev/installation"
	// LabelContext names the context a DataObject belongs to: "" (absent)
	// for the namespace's root context, else the parent Installation's name.
	LabelContext = "cairn.dev/context"
	// LabelDataRef is a DataObject's name within its context.
	LabelDataRef = "cairn.dev/data-ref"
	// LabelTargetRef is an exported Target's name within its context.
	LabelTargetRef = "cairn.dev/target-ref"
)

// DeployPhase is the phase of an Execution or a DeployItem.
type DeployPhase string

// The phases of Executions and DeployItems. Succeeded and Failed are
// completed; the others are not.
const (
	DeployInit        DeployPhase = "Init"
	DeployProgressing DeployPhase = "Progressing"
	DeployDeleting    DeployPhase = "Deleting"
	DeploySucceeded   DeployPhase = "Succeeded"
	DeployFailed      DeployPhase = "Failed"
)

// Completed reports whether p is Succeeded or Failed.
func (p DeployPhase) Completed() bool { return p == DeploySucceeded || p == DeployFailed }

// InstallationPhase is the phase of an Installation.
type InstallationPhase string

// The phases of Installations. Succeeded, Failed and Aborted are final.
const (
	InstallationInit                InstallationPhase = "Init"
	InstallationPendingDependencies InstallationPhase = "PendingDependencies"
	InstallationProgressing         InstallationPhase = "Progressing"
	InstallationSucceeded           InstallationPhase = "Succeeded"
	InstallationFailed              InstallationPhase = "Failed"
	InstallationAborted             InstallationPhase = "Aborted"
	InstallationDeleting            InstallationPhase = "Deleting"
)

// Final reports whether p is Succeeded, Failed or Aborted.
func (p InstallationPhase) Final() bool {
	return p == InstallationSucceeded || p == InstallationFailed || p == InstallationAborted
}

// Target describes where deploy items deploy to: a type that deployers
// recognise and its configuration. Targets of type kubernetes-cluster get
// a status: whether the cluster is reachable.
type Target struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       TargetSpec   `json:"spec"`
	Status     TargetStatus `json:"status,omitzero"`
}

// TargetSpec is a Target's description.
type TargetSpec struct {
	Type   string          `json:"type"`
	Config json.RawMessage `json:"config,omitempty"`
}

// TargetTypeKubernetesCluster is the Target type of a Kubernetes cluster;
// its config is a KubernetesClusterConfig.
const TargetTypeKubernetesCluster = "kubernetes-cluster"

// KubernetesClusterConfig is the config of a kubernetes-cluster Target:
// the Secret (in the Target's namespace) and key holding its kubeconfig.
type KubernetesClusterConfig struct {
	Kubeconfig KubeconfigSource `json:"kubeconfig"`
}

// KubeconfigSource says where a kubeconfig comes from.
type KubeconfigSource struct {
	// SecretRef names the Secret and its key; the key defaults to
	// DefaultKubeconfigKey.
	SecretRef SecretKeyRef `json:"secretRef"`
}

// DefaultKubeconfigKey is the Secret key of a kubeconfig when its
// secretRef names none.
const DefaultKubeconfigKey = "kubeconfig"

// TargetStatus is what the target controller observed of a Target.
type TargetStatus struct {
	// ObservedGeneration is the generation the conditions describe.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ServerVersion is the cluster's version (e.g. v1.37.2) when it was
	// last reached.
	ServerVersion string `json:"serverVersion,omitempty"`
	// Conditions hold the Reachable condition.
	Conditions []Condition `json:"conditions,omitempty"`
}

// Condition is one aspect of an object's state, as in Kubernetes.
type Condition struct {
	// Type names the aspect (e.g. Reachable).
	Type string `json:"type"`
	// Status is ConditionTrue or ConditionFalse.
	Status ConditionStatus `json:"status"`
	// Reason is a CamelCase word for the status (e.g. SecretNotFound).
	Reason string `json:"reason,omitempty"`
	// Message says the reason to people.
	Message string `json:"message,omitempty"`
	// LastTransitionTime is when Status last changed.
	LastTransitionTime time.Time `json:"lastTransitionTime,omitzero"`
}

// ConditionStatus is the status of a Condition.
type ConditionStatus string

// The statuses of a condition.
const (
	ConditionTrue  ConditionStatus = "True"
	ConditionFalse ConditionStatus = "False"
)

// ConditionReachable is the type of a Target's condition saying whether
// cairn can reach the cluster it names.
const ConditionReachable = "Reachable"

// FindCondition returns the condition of type t in cs, or nil.
func FindCondition(cs []Condition, t string) *Condition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

// DataObject holds one piece of data in a context: an installation's
// export, or a value users provide for imports.
type DataObject struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	// Data is any JSON value.
	Data json.RawMessage `json:"data,omitempty"`
}

// Blueprint is a reusable description of a deployment.
type Blueprint struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       BlueprintSpec `json:"spec"`
}

// BlueprintSpec declares a blueprint's imports and exports, its nested
// installations and the templates that render its executions.
type BlueprintSpec struct {
	Imports []ParameterDefinition `json:"imports,omitempty"`
	Exports []ParameterDefinition `json:"exports,omitempty"`
	// Subinstallations are templates of nested Installations.
	Subinstallations []SubinstallationTemplate `json:"subinstallations,omitempty"`
	// DeployExecutions render YAML `deployItems: [...]`.
	DeployExecutions []TemplateExecutor `json:"deployExecutions,omitempty"`
	// ExportExecutions render YAML `exports: {...}`.
	ExportExecutions []TemplateExecutor `json:"exportExecutions,omitempty"`
}

// The types of a ParameterDefinition.
const (
	ParameterData   = "data"
	ParameterTarget = "target"
)

// ParameterDefinition declares one import or export of a blueprint.
type ParameterDefinition struct {
	Name string `json:"name"`
	// Type is "data" (default) or "target".
	Type string `json:"type,omitempty"`
	// Schema is a JSON schema the value must satisfy (data only).
	Schema json.RawMessage `json:"schema,omitempty"`
	// Optional imports may be left unset.
	Optional bool `json:"optional,omitempty"`
}

// TemplateGo is the only template type: Go text/template with sprig.
const TemplateGo = "GoTemplate"

// TemplateExecutor is one named template.
type TemplateExecutor struct {
	Name string `json:"name"`
	// Type is "GoTemplate" (the default).
	Type     string `json:"type,omitempty"`
	Template string `json:"template"`
}

// SubinstallationTemplate describes a nested Installation. Its data
// imports name the parent's imports or its siblings' exports.
type SubinstallationTemplate struct {
	Name      string              `json:"name"`
	Blueprint BlueprintReference  `json:"blueprint"`
	Imports   InstallationImports `json:"imports,omitzero"`
	Exports   InstallationExports `json:"exports,omitzero"`
}

// Installation applies a blueprint to its imports.
type Installation struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       InstallationSpec   `json:"spec"`
	Status     InstallationStatus `json:"status,omitzero"`
}

// InstallationSpec is what an Installation deploys and with what.
type InstallationSpec struct {
	Blueprint          BlueprintReference  `json:"blueprint"`
	Imports            InstallationImports `json:"imports,omitzero"`
	Exports            InstallationExports `json:"exports,omitzero"`
	AutomaticReconcile *AutomaticReconcile `json:"automaticReconcile,omitempty"`
}

// BlueprintReference is a blueprint given inline or the name of a
// Blueprint in the installation's namespace; exactly one is set.
type BlueprintReference struct {
	Inline *BlueprintSpec `json:"inline,omitempty"`
	Ref    string         `json:"ref,omitempty"`
}

// InstallationImports binds a blueprint's imports.
type InstallationImports struct {
	Data    []DataImport   `json:"data,omitempty"`
	Targets []TargetImport `json:"targets,omitempty"`
}

// DataImport binds one data import to exactly one source: a DataObject in
// the installation's context (dataRef), a Secret (secretRef), or a literal
// value.
type DataImport struct {
	Name      string          `json:"name"`
	DataRef   string          `json:"dataRef,omitempty"`
	SecretRef *SecretKeyRef   `json:"secretRef,omitempty"`
	Value     json.RawMessage `json:"value,omitempty"`
}

// SecretKeyRef names a Secret in the same namespace and, optionally, one
// of its keys (without a key the import is the map of every key).
type SecretKeyRef struct {
	Name string `json:"name"`
	Key  string `json:"key,omitempty"`
}

// TargetImport binds a target import to a Target in the namespace.
type TargetImport struct {
	Name   string `json:"name"`
	Target string `json:"target"`
}

// InstallationExports names where a blueprint's exports are published.
type InstallationExports struct {
	Data    []DataExport   `json:"data,omitempty"`
	Targets []TargetExport `json:"targets,omitempty"`
}

// DataExport publishes the export Name as the DataObject DataRef in the
// installation's context.
type DataExport struct {
	Name    string `json:"name"`
	DataRef string `json:"dataRef"`
}

// TargetExport publishes the export Name as the Target named Target.
type TargetExport struct {
	Name   string `json:"name"`
	Target string `json:"target"`
}

// AutomaticReconcile makes the controller reconcile a root installation by
// itself.
type AutomaticReconcile struct {
	// FailedReconcile retries a failed installation, with backoff
	// starting at Interval (default 1m), at most MaxRetries times (0: no
	// bound).
	FailedReconcile *FailedReconcile `json:"failedReconcile,omitempty"`
	// SucceededReconcile reconciles a succeeded installation every
	// Interval, to repair drift.
	SucceededReconcile *SucceededReconcile `json:"succeededReconcile,omitempty"`
}

// FailedReconcile configures retries of a failed installation.
type FailedReconcile struct {
	MaxRetries int       `json:"maxRetries,omitempty"`
	Interval   *Duration `json:"interval,omitempty"`
}

// SucceededReconcile configures periodic reconciles.
type SucceededReconcile struct {
	Interval *Duration `json:"interval,omitempty"`
}

// InstallationStatus is what the installation controller observed.
type InstallationStatus struct {
	Phase              InstallationPhase `json:"phase,omitempty"`
	ObservedGeneration int64             `json:"observedGeneration,omitempty"`
	// ImportGenerations are what each import was when last used.
	ImportGenerations []ImportGeneration `json:"importGenerations,omitempty"`
	// BlueprintGeneration is the version ("uid/generation") of the
	// Blueprint the nested objects were last rendered from, recorded like
	// an import's; empty for an inline blueprint, which the installation's
	// own generation covers.
	BlueprintGeneration string `json:"blueprintGeneration,omitempty"`
	// ConfigGeneration changes each time the installation publishes new
	// exports; importers compare it with what they recorded.
	ConfigGeneration string     `json:"configGeneration,omitempty"`
	LastError        *LastError `json:"lastError,omitempty"`
	// ExecutionRef names the installation's Execution.
	ExecutionRef string `json:"executionRef,omitempty"`
	// Subinstallations name the nested Installations by template name.
	Subinstallations []NamedRef `json:"subinstallations,omitempty"`
	// AutomaticReconcile counts the automatic retries of a failure.
	AutomaticReconcile *AutomaticReconcileStatus `json:"automaticReconcile,omitempty"`
}

// ImportGeneration records what an import was when last used: where it
// came from and an opaque generation (an exporter's configGeneration, an
// object's generation, or a hash of a value). Never the value itself.
type ImportGeneration struct {
	Name       string `json:"name"`
	Source     string `json:"source"`
	Generation string `json:"generation"`
}

// NamedRef maps a name in a spec to the object it became.
type NamedRef struct {
	Name string `json:"name"`
	Ref  string `json:"ref"`
}

// AutomaticReconcileStatus counts automatic retries.
type AutomaticReconcileStatus struct {
	FailedRetries int       `json:"failedRetries,omitempty"`
	LastRetry     time.Time `json:"lastRetry,omitzero"`
}

// Execution is a rendered list of deploy items.
type Execution struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       ExecutionSpec   `json:"spec"`
	Status     ExecutionStatus `json:"status,omitzero"`
}

// ExecutionSpec lists the deploy items.
type ExecutionSpec struct {
	DeployItems []DeployItemTemplate `json:"deployItems,omitempty"`
}

// DeployItemTemplate is one deploy item of an execution.
type DeployItemTemplate struct {
	Name   string          `json:"name"`
	Type   string          `json:"type"`
	Target string          `json:"target,omitempty"`
	Config json.RawMessage `json:"config,omitempty"`
	// DependsOn names deploy items of the same execution that must succeed
	// first.
	DependsOn []string  `json:"dependsOn,omitempty"`
	Timeout   *Duration `json:"timeout,omitempty"`
}

// ExecutionStatus is what the execution controller observed.
type ExecutionStatus struct {
	Phase              DeployPhase     `json:"phase,omitempty"`
	ObservedGeneration int64           `json:"observedGeneration,omitempty"`
	DeployItems        []DeployItemRef `json:"deployItems,omitempty"`
	// ExportRef names the DataObject holding every item's exports, set
	// only when all items succeeded.
	ExportRef string     `json:"exportRef,omitempty"`
	LastError *LastError `json:"lastError,omitempty"`
	// Ready counts the deploy items that succeeded for the current
	// generation, as "2/3", for printers.
	Ready string `json:"ready,omitempty"`
}

// DeployItemRef records a managed deploy item and the generations of the
// execution and of the item at its last update by the controller.
type DeployItemRef struct {
	Name                 string `json:"name"`
	Ref                  string `json:"ref"`
	ExecutionGeneration  int64  `json:"executionGeneration"`
	DeployItemGeneration int64  `json:"deployItemGeneration"`
}

// DeployItem is one unit of deployment, acted on by the deployer of its
// type.
type DeployItem struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       DeployItemSpec   `json:"spec"`
	Status     DeployItemStatus `json:"status,omitzero"`
}

// DeployItemSpec is what to deploy, where and how.
type DeployItemSpec struct {
	Type    string          `json:"type"`
	Target  string          `json:"target,omitempty"`
	Config  json.RawMessage `json:"config,omitempty"`
	Timeout *Duration       `json:"timeout,omitempty"`
}

// DeployItemStatus is what the deployer (and the timeout controller)
// observed.
type DeployItemStatus struct {
	Phase              DeployPhase `json:"phase,omitempty"`
	ObservedGeneration int64       `json:"observedGeneration,omitempty"`
	// LastReconcileTime is when a deployer last picked the item up: the
	// base of the progressing timeout.
	LastReconcileTime time.Time  `json:"lastReconcileTime,omitzero"`
	LastError         *LastError `json:"lastError,omitempty"`
	// ExportRef names the DataObject holding the item's exports.
	ExportRef string `json:"exportRef,omitempty"`
	// ProviderStatus is what the deployer of the item's type records of
	// its work (for the manifest and helm deployers: the objects they
	// manage); its shape is the type's.
	ProviderStatus json.RawMessage `json:"providerStatus,omitempty"`
}

// WriteRefused reports whether err is the API refusing a write for a
// reason a retry alone does not fix, but a change elsewhere does (a
// namespace's limit raised or objects deleted, a full store freed): 403
// (but a creator's missing right, see IsCreatorForbidden), 422, 413 and
// 507.
func WriteRefused(err error) bool {
	switch ReasonOf(err) {
	case ReasonForbidden:
		return !IsCreatorForbidden(err)
	case ReasonInvalid, ReasonTooLarge, ReasonInsufficientStorage:
		return true
	}
	return false
}

// DeployItemTypeContainer is the deploy item type that runs a command on
// the runtime (package deployer/container).
const DeployItemTypeContainer = "container"

// RunsCommand reports whether deploy items of type t run a command on a
// host: creating one is the run permission of its creator.
func RunsCommand(t string) bool { return t == DeployItemTypeContainer }
