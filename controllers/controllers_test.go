package controllers_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/manager"
)

func TestSelect_NamesPickControllers(t *testing.T) {
	all := []manager.Controller{{Name: "gc"}, {Name: "execution"}, {Name: "cleaner"}}
	for _, tc := range []struct {
		value string
		want  []string
		err   string
	}{
		{"true", []string{"gc", "execution", "cleaner"}, ""},
		{"*", []string{"gc", "execution", "cleaner"}, ""},
		{"false", nil, ""},
		{"", nil, ""},
		{"gc", []string{"gc"}, ""},
		{"cleaner, gc", []string{"cleaner", "gc"}, ""},
		{"gc,gc", []string{"gc"}, ""},
		{"gc,nope", nil, `unknown controller "nope": the controllers are gc, execution, cleaner`},
	} {
		got, err := controllers.Select(all, tc.value)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Select(%q): error %v, want %q", tc.value, err, tc.err)
			}
			continue
		}
		var names []string
		for _, c := range got {
			names = append(names, c.Name)
		}
		if err != nil || !slices.Equal(names, tc.want) {
			t.Errorf("Select(%q) = %v, %v; want %v", tc.value, names, err, tc.want)
		}
	}
}

func TestList_EveryControllerHasANameAndASetup(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range controllers.List(controllers.Config{}) {
		if c.Name == "" || (c.Setup == nil) == (c.Standby == nil) || seen[c.Name] {
			t.Errorf("controller %+v: every entry needs a unique name and a setup or a standby part", c.Name)
		}
		seen[c.Name] = true
	}
	if !seen["gc"] {
		t.Error("the garbage collector is not in the list")
	}
}

func TestConfig_CheckEventsRefusesNegativeSettingsNamingTheFlag(t *testing.T) {
	for _, tc := range []struct {
		cfg  controllers.Config
		flag string
	}{
		{controllers.Config{}, ""},
		{controllers.Config{EventMaxWorkers: 4, EventMaxJobs: 8, EventGracePeriod: time.Second}, ""},
		{controllers.Config{EventMaxWorkers: -1}, "--event-max-workers"},
		{controllers.Config{EventMaxJobs: -1}, "--event-max-jobs"},
		{controllers.Config{EventGracePeriod: -time.Second}, "--event-grace-period"},
	} {
		err := tc.cfg.CheckEvents()
		if (tc.flag == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.flag)) {
			t.Errorf("CheckEvents(%+v) = %v, want an error naming %q", tc.cfg, err, tc.flag)
		}
	}
}
