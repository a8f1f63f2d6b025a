package commitstatus

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/google/go-github/v82/github"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/informer"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/trace"
)

// Options configures the reporter. The zero value is usable.
type Options struct {
	// ConsoleURL is the URL of the console the statuses link to, as
	// served by the API server under /ui/ (the statuses link to
	// ConsoleURL + "namespaces/NS/events/NAME"); default the term's
	// APIServer + "/ui/" (the console is served by every API server).
	ConsoleURL string
	// HTTPClient posts the statuses; default http.DefaultClient.
	HTTPClient *http.Client
	// Workers is the number of Events reported at once; default 4.
	Workers int
}

// gatewayIndex indexes Events by the key ("ns/name") of the Gateway they
// came through.
const gatewayIndex = "commitstatus.gateway"

// Setup adds the reporter to a manager's term: it reconciles every Event
// when it changes or its Gateway does, reading Gateways and Secrets from
// the term's shared informers.
func Setup(t *manager.Term, opts Options) error {
	r := newReconciler(t, opts)
	return manager.NewBuilder(t, "commitstatus").
		For(api.KindEvent).
		Index(api.KindEvent, gatewayIndex, indexGateway).
		Watches(api.KindGateway, func(obj *api.Object) []string {
			keys, _ := r.events.IndexKeys(gatewayIndex, api.Key(obj.Namespace, obj.Name))
			return keys
		}).
		Reads(api.KindSecret).
		Workers(r.opts.Workers).
		Complete(r)
}

// indexGateway indexes an Event by its Gateway's key.
func indexGateway(obj *api.Object) []string {
	if gw := obj.Annotations[annotationGateway]; gw != "" {
		return []string{api.Key(obj.Namespace, gw)}
	}
	return nil
}

// Reconciler posts the commit status of each Event's worker phase once.
// It is level-based: each Reconcile reads the Event and its Gateway,
// decides (Decide), and posts unless that state was posted already for
// the Event (in memory: a restart may post the current state once more,
// which GitHub takes as the same status again). It never writes objects.
type Reconciler struct {
	opts     Options
	events   *informer.Informer
	gateways *informer.Informer
	secrets  *informer.Informer

	mu     sync.Mutex
	posted map[string]posted // by event key
}

// posted is the last state posted for an event (of that uid).
type posted struct{ uid, state string }

func newReconciler(t *manager.Term, opts Options) *Reconciler {
	if opts.ConsoleURL == "" {
		opts.ConsoleURL = strings.TrimRight(t.APIServer, "/") + "/ui/"
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = http.DefaultClient
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	return &Reconciler{opts: opts, events: t.Informers.For(api.KindEvent), gateways: t.Informers.For(api.KindGateway),
		secrets: t.Informers.For(api.KindSecret), posted: map[string]posted{}}
}

// Reconcile reports the Event key ("ns/name"). It blocks on one HTTP
// request to GitHub at most. Errors (retried with the queue's backoff):
// the token's Secret or key missing, GitHub's refusal or no answer.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name := api.SplitKey(key)
	obj, ok := r.events.Get(ns, name)
	if !ok {
		r.forget(key)
		trace.Exit(ctx, "the event is gone")
		return controller.Result{}, nil
	}
	ev, err := controller.Decode[*api.Event](obj)
	if err != nil {
		return controller.Result{}, controller.Terminal(fmt.Errorf("commitstatus: %w", err))
	}
	gwName := ev.Annotations[annotationGateway]
	if gwName == "" {
		return controller.Result{}, nil // not from a Gateway: nothing to report
	}
	var gw *api.Gateway
	if gobj, ok := r.gateways.Get(ns, gwName); ok {
		if gw, err = controller.Decode[*api.Gateway](gobj); err != nil {
			return controller.Result{}, controller.Terminal(fmt.Errorf("commitstatus: %w", err))
		}
	}
	rep, ok := Decide(ev, gw, r.opts.ConsoleURL)
	if !ok || r.done(key, ev.UID, rep.State) {
		trace.Exit(ctx, "nothing to report for phase %s", ev.Status.Worker.Phase)
		return controller.Result{}, nil
	}
	token, err := r.token(ns, rep.TokenRef)
	if err != nil {
		return controller.Result{}, err
	}
	if err := Post(ctx, r.opts.HTTPClient, token, rep); err != nil {
		trace.Exit(ctx, "posting %s to %s/%s@%s failed: %v", rep.State, rep.Owner, rep.Repo, rep.SHA, err)
		return controller.Result{}, err
	}
	r.remember(key, ev.UID, rep.State)
	trace.Action(ctx, "posted %s %s to %s/%s@%s", rep.Context, rep.State, rep.Owner, rep.Repo, rep.SHA)
	return controller.Result{}, nil
}

// token reads the reporting token from the Secret ref names in ns.
// Errors: the Secret or its key is missing (naming them, never a value).
func (r *Reconciler) token(ns string, ref api.SecretKeyRef) (string, error) {
	obj, ok := r.secrets.Get(ns, ref.Name)
	if !ok {
		return "", fmt.Errorf("commitstatus: the Gateway's spec.report.tokenSecretRef names Secret %s/%s, which does not exist", ns, ref.Name)
	}
	sec, err := controller.Decode[*api.Secret](obj)
	if err != nil {
		return "", controller.Terminal(fmt.Errorf("commitstatus: %w", err))
	}
	v := strings.TrimSpace(string(sec.Data[ref.Key]))
	if v == "" {
		return "", fmt.Errorf("commitstatus: Secret %s/%s has no key %s (spec.report.tokenSecretRef.key)", ns, ref.Name, ref.Key)
	}
	return v, nil
}

// Post creates the commit status rep with token through GitHub's API at
// rep.APIURL (POST {apiURL}/repos/{owner}/{repo}/statuses/{sha}). It
// blocks on the request. Errors: the URL is not one, GitHub's answer
// other than 201, the transport's.
func Post(ctx context.Context, hc *http.Client, token string, rep Report) error {
	base, err := url.Parse(strings.TrimRight(rep.APIURL, "/") + "/")
	if err != nil {
		return controller.Terminal(fmt.Errorf("commitstatus: apiURL %q: %w", rep.APIURL, err))
	}
	gh := github.NewClient(hc).WithAuthToken(token)
	gh.BaseURL = base
	st := github.RepoStatus{State: github.Ptr(rep.State), Context: github.Ptr(rep.Context), Description: github.Ptr(rep.Description)}
	if rep.TargetURL != "" {
		st.TargetURL = github.Ptr(rep.TargetURL)
	}
	_, _, err = gh.Repositories.CreateStatus(ctx, rep.Owner, rep.Repo, rep.SHA, st)
	var ge *github.ErrorResponse
	if errors.As(err, &ge) && ge.Response != nil {
		return fmt.Errorf("commitstatus: GitHub answered %d: %s", ge.Response.StatusCode, ge.Message)
	}
	return err
}

func (r *Reconciler) done(key, uid, state string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.posted[key]
	return ok && p.uid == uid && p.state == state
}

func (r *Reconciler) remember(key, uid, state string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.posted[key] = posted{uid, state}
}

func (r *Reconciler) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.posted, key)
}
