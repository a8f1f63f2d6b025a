package gateway

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"cairn.dev/cairn/api"
)

// SourceGitHub is the source of the Events a github Gateway creates.
const SourceGitHub = "github"

// The labels and qualifier of a github Gateway's Events (DESIGN.md).
const (
	QualifierRepo = "repo"
	LabelPR       = "pr"
	LabelBranch   = "branch"
	LabelSHA      = "sha"
	LabelFork     = api.EventLabelFork
	LabelLabel    = "label"
)

// prActions are the pull_request actions a github Gateway turns into
// Events; others are ignored.
var prActions = []string{"opened", "synchronize", "reopened", "closed", "labeled", "unlabeled"}

// trustedAssociations are the author associations of a commenter who can
// write to the repository: their comments on a pull request are not a
// fork's words.
var trustedAssociations = []string{"OWNER", "MEMBER", "COLLABORATOR"}

// Delivery is what a GitHub delivery becomes: an Event's fields (Ping and
// Ignored unset), an answer to a ping, or an ignored delivery with why.
type Delivery struct {
	// Ping: the delivery is GitHub's ping; it is answered, nothing more.
	Ping bool
	// Ignored says why no Event is created (an event type or action the
	// gateway does not map); empty when one is.
	Ignored string
	// Source, Type, Qualifiers and Labels are the Event's spec fields.
	Source     string
	Type       string
	Qualifiers map[string]string
	Labels     map[string]string
	// Title is the Event's shortTitle.
	Title string
	// Payload is the Event's payload: a github delivery's body, a
	// CloudEvent's data.
	Payload string
}

// ghRepo, ghRef, ghPayload are the parts of GitHub's webhook payloads the
// mapping reads (https://docs.github.com/webhooks/webhook-events-and-payloads).
type ghRepo struct {
	ID       int64  `json:"id"`
	FullName string `json:"full_name"`
}

type ghRef struct {
	Ref  string  `json:"ref"`
	SHA  string  `json:"sha"`
	Repo *ghRepo `json:"repo"`
}

// ghSuitePR is a pull request a check suite lists.
type ghSuitePR struct {
	Number int   `json:"number"`
	Head   ghRef `json:"head"`
	Base   ghRef `json:"base"`
}

type ghPayload struct {
	Action      string  `json:"action"`
	Ref         string  `json:"ref"`
	After       string  `json:"after"`
	Repository  *ghRepo `json:"repository"`
	Number      int     `json:"number"`
	PullRequest *struct {
		Number int    `json:"number"`
		Title  string `json:"title"`
		Head   ghRef  `json:"head"`
		Base   ghRef  `json:"base"`
	} `json:"pull_request"`
	Label *struct {
		Name string `json:"name"`
	} `json:"label"`
	Issue *struct {
		Number      int             `json:"number"`
		Title       string          `json:"title"`
		PullRequest json.RawMessage `json:"pull_request"`
	} `json:"issue"`
	Comment *struct {
		AuthorAssociation string `json:"author_association"`
	} `json:"comment"`
	CheckSuite *struct {
		HeadBranch   string      `json:"head_branch"`
		HeadSHA      string      `json:"head_sha"`
		PullRequests []ghSuitePR `json:"pull_requests"`
	} `json:"check_suite"`
}

// MapGitHub maps a GitHub delivery (the X-GitHub-Event header and the JSON
// body) to an Event's fields, as DESIGN.md says:
//
//   - push → type push; branch (from refs/heads/..., absent for a tag),
//     sha (after), fork "false";
//   - pull_request (opened, synchronize, reopened, closed, labeled,
//     unlabeled) → type pull_request:<action>; pr, branch and sha of the
//     head, fork "true" when the head is in another repository than the
//     base (or was deleted), label for labeled and unlabeled;
//   - issue_comment → type issue_comment:<action>; pr when the issue is a
//     pull request, fork "true" unless the commenter can write to the
//     repository (OWNER, MEMBER, COLLABORATOR): GitHub's payload does not
//     say where the pull request's head is;
//   - check_suite → type check_suite:<action>; branch, sha, pr (the first
//     pull request listed), fork "false" only when it lists pull requests
//     and all come from the repository itself (GitHub lists none for a
//     fork's suite, nor for a plain push's: either counts as a fork);
//   - ping → Ping; any other event type or pull_request action → Ignored.
//
// Every Event is qualified by repo (the repository's owner/name). It is a
// pure function. Errors: BadRequest when the body is not a JSON object or
// lacks the repository.
func MapGitHub(eventType string, body []byte) (Delivery, error) {
	if eventType == "ping" {
		return Delivery{Ping: true}, nil
	}
	var p ghPayload
	if err := json.Unmarshal(body, &p); err != nil {
		return Delivery{}, api.NewBadRequest("the delivery's body is not a JSON object: %v; "+
			"set the webhook's content type in GitHub to application/json", err)
	}
	d := Delivery{Labels: map[string]string{}}
	switch eventType {
	case "push":
		d.Type = "push"
		if b, ok := strings.CutPrefix(p.Ref, "refs/heads/"); ok {
			d.Labels[LabelBranch] = b
		}
		setIf(d.Labels, LabelSHA, p.After)
		d.Labels[LabelFork] = "false"
		d.Title = "push " + p.Ref
	case "pull_request":
		if !slices.Contains(prActions, p.Action) || p.PullRequest == nil {
			return Delivery{Ignored: "pull_request action " + strconv.Quote(p.Action) + " is not mapped"}, nil
		}
		pr := p.PullRequest
		d.Type = "pull_request:" + p.Action
		d.Labels[LabelPR] = strconv.Itoa(pr.Number)
		setIf(d.Labels, LabelBranch, pr.Head.Ref)
		setIf(d.Labels, LabelSHA, pr.Head.SHA)
		d.Labels[LabelFork] = strconv.FormatBool(isFork(pr.Head.Repo, pr.Base.Repo))
		if (p.Action == "labeled" || p.Action == "unlabeled") && p.Label != nil {
			d.Labels[LabelLabel] = p.Label.Name
		}
		d.Title = "#" + strconv.Itoa(pr.Number) + " " + pr.Title
	case "issue_comment":
		d.Type = "issue_comment:" + p.Action
		if p.Issue != nil {
			if len(p.Issue.PullRequest) > 0 && string(p.Issue.PullRequest) != "null" {
				d.Labels[LabelPR] = strconv.Itoa(p.Issue.Number)
			}
			d.Title = "#" + strconv.Itoa(p.Issue.Number) + " " + p.Issue.Title
		}
		trusted := p.Comment != nil && slices.Contains(trustedAssociations, p.Comment.AuthorAssociation)
		d.Labels[LabelFork] = strconv.FormatBool(!trusted)
	case "check_suite":
		d.Type = "check_suite:" + p.Action
		fork := true
		if cs := p.CheckSuite; cs != nil {
			setIf(d.Labels, LabelBranch, cs.HeadBranch)
			setIf(d.Labels, LabelSHA, cs.HeadSHA)
			if len(cs.PullRequests) > 0 {
				d.Labels[LabelPR] = strconv.Itoa(cs.PullRequests[0].Number)
				fork = slices.ContainsFunc(cs.PullRequests, func(pr ghSuitePR) bool { return isFork(pr.Head.Repo, pr.Base.Repo) })
			}
		}
		d.Labels[LabelFork] = strconv.FormatBool(fork)
		d.Title = "check suite " + p.Action
	default:
		return Delivery{Ignored: "event type " + strconv.Quote(eventType) + " is not mapped"}, nil
	}
	if p.Repository == nil || p.Repository.FullName == "" {
		return Delivery{}, api.NewBadRequest("the %s delivery has no repository.full_name", eventType)
	}
	d.Source, d.Payload = SourceGitHub, string(body)
	d.Qualifiers = map[string]string{QualifierRepo: p.Repository.FullName}
	d.Title = truncate(d.Title, 256)
	return d, nil
}

// isFork reports whether a pull request whose head is in head and base in
// base comes from a fork: another repository, or one deleted since (nil).
func isFork(head, base *ghRepo) bool {
	if head == nil || base == nil {
		return true
	}
	if head.ID != 0 && base.ID != 0 {
		return head.ID != base.ID
	}
	return !strings.EqualFold(head.FullName, base.FullName)
}

func setIf(m map[string]string, k, v string) {
	if v != "" {
		m[k] = v
	}
}

// truncate cuts s to at most n bytes, on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
