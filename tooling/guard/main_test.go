package main

// The guard's checks as tables, on plain data and throwaway folders (run by
// tests/test_guard.py with the Go toolchain; the end-to-end tests run it under the
// real Terragrunt).

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const dns = "live/cloud/dns"

// NormalizedVector is Normalized("a = 1\n\n  b = \"x y\"\n"), which
// tests/test_guard.py checks the Python side against.
const NormalizedVector = "399bbad9ed5eb21ed1915708129667fc09328d5ebd988a515257c752179296e1"

func module() *Module {
	return &Module{
		Pinned: "https://h/o/m.git@v1.1.0",
		Commit: strings.Repeat("c", 40),
		Subdir: "modules/vm",
		Files: map[string]string{
			"modules/vm/main.tf":   blobSHA([]byte("main")),
			"modules/vm/tpl.yaml":  blobSHA([]byte("tpl")),
			"modules/vm/vars.tf":   blobSHA([]byte(`variable "zone" {}`)),
			"modules/other/own.tf": blobSHA([]byte("other")),
		},
		Generated: map[string]string{"backend.tf": Normalized([]byte("terraform {\n  backend \"local\" {}\n}\n")), "encryption.tf": ""},
	}
}

// checkout writes “files“ under a fresh checkout and returns the unit folder and the
// module folder (where Terragrunt runs OpenTofu).
func checkout(t *testing.T, files map[string]string, unitFiles ...string) (string, string) {
	t.Helper()
	unit := t.TempDir()
	root := filepath.Join(unit, ".terragrunt-cache", "h1", "h2")
	base := map[string]string{
		"modules/vm/main.tf": "main", "modules/vm/tpl.yaml": "tpl",
		"modules/vm/vars.tf": `variable "zone" {}`, "modules/other/own.tf": "other",
	}
	for k, v := range files {
		base[k] = v
	}
	for rel, text := range base {
		if text == "<absent>" {
			continue
		}
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range unitFiles {
		if err := os.WriteFile(filepath.Join(unit, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return unit, filepath.Join(root, "modules", "vm")
}

func texts(problems []Problem) []string {
	var out []string
	for _, p := range problems {
		out = append(out, p.String())
	}
	return out
}

func wantProblems(t *testing.T, got []Problem, fragments ...string) {
	t.Helper()
	lines := texts(got)
	if len(lines) != len(fragments) {
		t.Fatalf("got %d problems, want %d: %q", len(lines), len(fragments), lines)
	}
	for i, fragment := range fragments {
		if !strings.Contains(lines[i], fragment) {
			t.Errorf("problem %d = %q, want it to hold %q", i, lines[i], fragment)
		}
	}
}

func TestAWorkingCopyIsTheModulePlusTheRootFilesGeneratedFilesAndNothingElse(t *testing.T) {
	cases := []struct {
		name      string
		files     map[string]string
		unitFiles []string
		want      []string
	}{
		{"module-plus-generated", map[string]string{"modules/vm/backend.tf": "terraform {\n    backend \"local\" {}\n}\n", "modules/vm/encryption.tf": "anything"}, nil, nil},
		{"terragrunt-own-and-non-code", map[string]string{"modules/vm/.terragrunt-null-vars.auto.tfvars.json": `{"zone": null}`, "README.md": "y"}, nil, nil},
		{"changed-module-file", map[string]string{"modules/vm/main.tf": "changed"}, nil, []string{"working-copy: modules/vm/main.tf in the working copy differs from https://h/o/m.git@v1.1.0 (commit cccc"}},
		{"missing-module-file", map[string]string{"modules/vm/main.tf": "<absent>"}, nil, []string{"working-copy: modules/vm/main.tf of https://h/o/m.git@v1.1.0 is missing"}},
		{"unit-folder-code", map[string]string{"modules/vm/extra.tf": "x"}, []string{"terragrunt.hcl", "extra.tf"}, []string{dns + "/extra.tf:1: working-copy: OpenTofu code beside terragrunt.hcl"}},
		{"undeclared-generated", map[string]string{"modules/vm/zone_override.tf": "x"}, nil, []string{"modules/vm/zone_override.tf in the working copy is neither a file of"}},
		{"tfvars-elsewhere", map[string]string{"modules/other/x.auto.tfvars": "x"}, nil, []string{"modules/other/x.auto.tfvars in the working copy is neither"}},
		{"generated-name-elsewhere", map[string]string{"modules/backend.tf": "x"}, nil, []string{"modules/backend.tf in the working copy is neither"}},
		{"generated-other-contents", map[string]string{"modules/vm/backend.tf": "terraform {\n  backend \"local\" { path = \"/tmp/x\" }\n}\n"}, nil, []string{"backend.tf in the working copy is not what the root file generates"}},
		{"null-vars-with-a-value", map[string]string{"modules/vm/terragrunt-null-vars.auto.tfvars.json": `{"zone": "evil"}`}, nil, []string{"terragrunt-null-vars.auto.tfvars.json in the working copy sets zone"}},
		{"null-vars-of-the-pipeline", map[string]string{"modules/vm/.terragrunt-null-vars.auto.tfvars.json": `{"iac_encryption_passphrase": null}`}, nil, []string{"sets iac_encryption_passphrase"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			unitDir, cwd := checkout(t, c.files, c.unitFiles...)
			unit := &Unit{Path: dns, Module: module(), Variables: []string{"zone"}}
			root, got := checkWorkingCopy(unit, unitDir, cwd)
			if root != "" {
				got = append(got, checkNullVars(unit, cwd)...)
			}
			wantProblems(t, got, c.want...)
		})
	}
}

func TestAUnitWhoseExpectationIsUnknownIsRefusedWhateverItsCopyHolds(t *testing.T) {
	unitDir, cwd := checkout(t, nil)
	m := module()
	m.Error = "https://h/o/m.git has no tag v9.9.9"
	_, got := checkWorkingCopy(&Unit{Path: dns, Module: m}, unitDir, cwd)
	wantProblems(t, got, dns+": working-copy: https://h/o/m.git has no tag v9.9.9")
}

func TestTheNormalizedContentsIgnoreOnlySpacesTabsAndBlankLines(t *testing.T) {
	a := Normalized([]byte("terraform {\n  backend \"local\" {\n    path = \"/s\"\n  }\n}\n"))
	b := Normalized([]byte("terraform {\n\n\tbackend \"local\" {\n path=\"/s\"\n}\n}"))
	if a != b {
		t.Fatal("formatting changed the normalized contents")
	}
	if a == Normalized([]byte("terraform {\n  backend \"local\" {\n    path = \"/t\"\n  }\n}\n")) {
		t.Fatal("another path normalized alike")
	}
	// the same vector as tests/test_guard.py checks for the Python side
	if got := Normalized([]byte("a = 1\n\n  b = \"x y\"\n")); got != NormalizedVector {
		t.Fatal(got)
	}
}

func call(env, base map[string]string) Call {
	return Call{Env: env, Base: base}
}

func TestTheEnvironmentIsAnAllowlistAgainstWhatTerragruntStartedWith(t *testing.T) {
	unit := &Unit{Path: dns, Variables: []string{"zone", "records"}}
	base := map[string]string{"HOME": "/root", "PATH": "/usr/bin", "TF_CLI_ARGS_init": "-lockfile=readonly", "TF_VAR_iac_encryption_passphrase": "pipeline's"}
	cases := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"unchanged", map[string]string{"HOME": "/root", "PATH": "/usr/bin"}, nil},
		{"module-variables", map[string]string{"HOME": "/root", "TF_VAR_zone": "z", "TF_VAR_records": "{}"}, nil},
		{"the-pipeline's-own-key-unchanged", map[string]string{"TF_VAR_iac_encryption_passphrase": "pipeline's"}, nil},
		{"home", map[string]string{"HOME": "/tmp/h"}, []string{"exec-env: OpenTofu's environment changes HOME"}},
		{"ld-preload", map[string]string{"LD_PRELOAD": "/x.so"}, []string{"sets LD_PRELOAD"}},
		{"tf-cli-args", map[string]string{"TF_CLI_ARGS_init": "-backend-config=path=/tmp/s"}, []string{"changes TF_CLI_ARGS_init"}},
		{"the-pipeline's-key", map[string]string{"TF_VAR_iac_encryption_passphrase": "known"}, []string{"changes TF_VAR_iac_encryption_passphrase: it is not a variable of the unit's module"}},
		{"not-a-module-variable", map[string]string{"TF_VAR_other": "x"}, []string{"sets TF_VAR_other"}},
		{"data-dir-and-plugin-cache", map[string]string{"TF_DATA_DIR": "/d", "TF_PLUGIN_CACHE_DIR": "/p"}, []string{"sets TF_DATA_DIR", "sets TF_PLUGIN_CACHE_DIR"}},
		{"identity-without-an-allowed-role", map[string]string{"AWS_ACCESS_KEY_ID": "AKIA"}, []string{"sets AWS_ACCESS_KEY_ID"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantProblems(t, checkEnv(dns, unit, call(c.env, base)), c.want...)
		})
	}
	allowed := &Unit{Path: dns, Identity: true}
	wantProblems(t, checkEnv(dns, allowed, call(map[string]string{"AWS_ACCESS_KEY_ID": "A", "AWS_SESSION_TOKEN": "T"}, base)))
}

func TestTheArgumentsAreAnAllowlistPerCommand(t *testing.T) {
	unitDir, cwd := checkout(t, map[string]string{"modules/vm/own.tfvars": "zone = 1"})
	_ = unitDir
	unit := &Unit{Path: dns, Module: module(), Variables: []string{"zone"}, Backend: &Backend{Type: "local", Config: map[string]any{"path": "/state/dns.tfstate"}}}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"version", []string{"-version"}, nil},
		{"init", []string{"init", "-no-color"}, nil},
		{"plan", []string{"plan", "-input=false", "-lock-timeout=0s", "-out=/p/plan", "-json-into=/p/j", "-destroy", "-detailed-exitcode", "-no-color"}, nil},
		{"apply", []string{"apply", "-input=false", "-auto-approve", "-lock-timeout=0s", "/p/plan"}, nil},
		{"show-output-state", []string{"show", "-json", "/p/plan"}, nil},
		{"own-var-file", []string{"plan", "-var-file=own.tfvars", "-var=zone=x"}, nil},
		{"plugin-dir", []string{"init", "-plugin-dir=/tmp/p"}, []string{"exec-args: `tofu init` would get -plugin-dir"}},
		{"plugin-dir-two-words", []string{"init", "-plugin-dir", "/tmp/p", "-no-color"}, []string{"would get -plugin-dir"}},
		{"var-file-outside", []string{"plan", "-var-file=/tmp/outside.tfvars"}, []string{"-var-file=/tmp/outside.tfvars is outside the unit's working copy"}},
		{"var-file-climbing-out", []string{"plan", "-var-file", "../../../../x.tfvars"}, []string{"is outside the unit's working copy"}},
		{"state", []string{"plan", "-state=/tmp/s"}, []string{"would get -state"}},
		{"backend-config-on-plan", []string{"plan", "-backend-config=path=/tmp/s"}, []string{"would get -backend-config"}},
		{"backend-config-elsewhere", []string{"init", "-backend-config=path=/tmp/s"}, []string{"-backend-config sets path to another value"}},
		{"backend-config-the-root-file's", []string{"init", "-backend-config=path=/state/dns.tfstate"}, nil},
		{"backend-config-file", []string{"init", "-backend-config=other.hcl"}, []string{"replaces the state backend"}},
		{"chdir", []string{"-chdir=/elsewhere", "plan"}, []string{"with -chdir before its command"}},
		{"out-twice", []string{"plan", "-out=/a", "-out=/b"}, []string{"-out twice"}},
		{"refresh-off", []string{"plan", "-refresh=false"}, []string{"would get -refresh"}},
		{"target", []string{"plan", "-target=x.y"}, []string{"would get -target"}},
		{"pipeline-variable", []string{"plan", "-var=iac_encryption_passphrase=k"}, []string{"-var sets iac_encryption_passphrase"}},
		{"lock-off-on-apply", []string{"apply", "-lock=false", "/p/plan"}, []string{"would get -lock"}},
		{"second-plan-file", []string{"apply", "/other", "/p/plan"}, []string{"2 argument(s)"}},
		{"console", []string{"console"}, []string{"`tofu console` is not a command the pipeline runs"}},
		{"lockfile-upgrade", []string{"init", "-upgrade"}, []string{"would get -upgrade"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd, rest := command(c.args)
			got := checkArgs(cmd, rest, dns, unit, Call{Cwd: cwd})
			wantProblems(t, got, c.want...)
		})
	}
}

func TestTheRecordedBackendIsTheUnitsOwn(t *testing.T) {
	unit := &Unit{Path: dns, Backend: &Backend{Type: "s3", Config: map[string]any{
		"bucket": "b", "key": "live/cloud/dns/terraform.tfstate", "region": "us-east-1",
		"encrypt": true, "use_lockfile": true, "endpoints": map[string]any{"s3": "http://127.0.0.1:1"},
	}}}
	record := func(t *testing.T, text string) Call {
		dir := t.TempDir()
		if text != "" {
			if err := os.MkdirAll(filepath.Join(dir, ".terraform"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, ".terraform", "terraform.tfstate"), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return Call{Cwd: dir, Env: map[string]string{}}
	}
	own := `{"version":3,"backend":{"type":"s3","config":{"bucket":"b","key":"live/cloud/dns/terraform.tfstate","region":"us-east-1","encrypt":true,"use_lockfile":true,"endpoints":{"s3":"http://127.0.0.1:1","iam":null},"profile":null,"workspace_key_prefix":""}}}`
	cases := []struct {
		name, text string
		want       []string
	}{
		{"own", own, nil},
		{"none", "", []string{"exec-backend: OpenTofu recorded no backend after init"}},
		{"another-key", strings.Replace(own, "live/cloud/dns/", "live/cloud/iam/", 1), []string{"has another key than the root file declares"}},
		{"another-type", `{"backend":{"type":"local","config":{"path":"/x"}}}`, []string{"initialised the local backend, not the s3 backend"}},
		{"a-role", strings.Replace(own, `"profile":null`, `"profile":"admin"`, 1), []string{"sets profile, which the root file does not"}},
		{"another-endpoint", strings.Replace(own, "127.0.0.1:1", "evil:1", 1), []string{"another endpoints"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantProblems(t, checkBackend(unit, record(t, c.text)), c.want...)
		})
	}
}

func TestOpenTofuRunsOnlyInTheWorkingCopyOfAPreparedUnit(t *testing.T) {
	unitDir, cwd := checkout(t, nil)
	cfg := &Config{Units: map[string]*Unit{unitDir: {Path: dns, Module: module(), Variables: []string{"zone"}, Backend: &Backend{Type: "local"}}}}
	if _, u := findUnit(cfg, cwd); u == nil || u.Path != dns {
		t.Fatalf("the unit of %s was not found", cwd)
	}
	got := Check(cfg, Call{Args: []string{"init"}, Cwd: t.TempDir(), Env: map[string]string{}, Base: map[string]string{}})
	wantProblems(t, got, "exec-run: OpenTofu would run `init` in")
	got = Check(cfg, Call{Args: []string{"-version"}, Cwd: t.TempDir(), Env: map[string]string{}, Base: map[string]string{}})
	wantProblems(t, got)
}
