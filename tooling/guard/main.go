// Command tfguard is the pipeline's point of execution: Terragrunt runs it instead of
// OpenTofu (TG_TF_PATH), and it checks what Terragrunt hands to OpenTofu before each
// OpenTofu command (init, plan, apply, show, output, ...): the arguments, the
// environment, the working copy, and the backend OpenTofu recorded after init. When
// all of it is what the pipeline allows for the unit, it replaces itself with the
// pinned OpenTofu (execve: the same process, argv and environment); otherwise it
// prints one line per problem, naming the unit, the rule and the fix, and exits 1
// without starting OpenTofu.
//
// Nothing it checks can steer it (docs/rules.md, "The point of execution"):
//
//   - it is a static binary (Go, CGO_ENABLED=0, standard library only): no dynamic
//     loader runs, so LD_PRELOAD, LD_LIBRARY_PATH and the like are never read;
//   - its configuration is the file guard.json beside its own executable, found
//     through /proc/self/exe (the pipeline hard-links or copies the binary into a
//     folder of its own per run): no environment variable, argument or working
//     folder names it;
//   - the environment it compares with is its parent's, the pinned Terragrunt's, as
//     the pipeline started it (/proc/PPID/environ, checked to be the Terragrunt the
//     configuration names through /proc/PPID/exe), not one the unit can set;
//   - it reads no PATH, HOME or configuration file of OpenTofu's: OpenTofu is started
//     by the absolute path the configuration gives.
package main

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// ConfigName is the configuration's file name, beside the executable.
const ConfigName = "guard.json"

// Config is what the pipeline writes for one run (tooling/core/rules/execpoint.py).
type Config struct {
	Format     int              `json:"format"`
	Tofu       string           `json:"tofu"`
	Terragrunt string           `json:"terragrunt"`
	Units      map[string]*Unit `json:"units"`
}

// Unit is what one unit may run with.
type Unit struct {
	Path      string   `json:"path"`
	Variables []string `json:"variables"`
	// Identity: the unit assumes a role [check.allowed_roles] lists, so Terragrunt
	// sets the role's AWS credentials in OpenTofu's environment.
	Identity     bool     `json:"identity"`
	Module       *Module  `json:"module"`
	Backend      *Backend `json:"backend"`
	BackendError string   `json:"backend_error"`
	// Extra: file names the pipeline itself writes into the working copy for one
	// command (adopt's import block).
	Extra []string `json:"extra"`
}

// Module is what the unit's working copy must hold.
type Module struct {
	Pinned string            `json:"pinned"`
	Commit string            `json:"commit"`
	Subdir string            `json:"subdir"`
	Files  map[string]string `json:"files"`
	// Generated: file name -> the SHA-256 of its contents as normalize() reads them,
	// or "" when only the name is known.
	Generated map[string]string `json:"generated"`
	Error     string            `json:"error"`
}

// Backend is the state backend the root file declares for the unit.
type Backend struct {
	Type   string         `json:"type"`
	Config map[string]any `json:"config"`
}

// Call is one OpenTofu command as Terragrunt hands it over.
type Call struct {
	Args []string          // without argv[0]
	Env  map[string]string // OpenTofu's environment
	Base map[string]string // the environment the pipeline started Terragrunt with
	Cwd  string            // real path of the working folder
}

// Problem is one refusal line.
type Problem struct {
	Unit, Rule, Text, Fix string
}

func (p Problem) String() string {
	unit := p.Unit
	if unit == "" {
		unit = "tofu"
	}
	line := fmt.Sprintf("%s: %s: %s", unit, p.Rule, p.Text)
	if p.Fix != "" {
		line += "; " + p.Fix
	}
	return line
}

func main() {
	// An interrupt that reaches this process before OpenTofu replaces it is OpenTofu's
	// one interrupt (the pipeline signals each process once): Go's default action ends
	// the guard by that signal, and OpenTofu never starts. (No signal.Notify: it costs a
	// third of the guard's own time, and a caught interrupt would have to be re-raised.)
	cfg, problem := loadConfig()
	call := Call{Args: os.Args[1:], Env: environ(os.Environ())}
	var problems []Problem
	if problem != "" {
		problems = []Problem{{Rule: "exec-run", Text: problem, Fix: "plan through the pipeline (`invoke plan`), which prepares the guard"}}
	} else {
		call.Base, problem = parentEnv(cfg.Terragrunt)
		if problem != "" {
			problems = []Problem{{Rule: "exec-run", Text: problem, Fix: "run OpenTofu only through the pipeline's Terragrunt"}}
		} else if cwd, err := os.Getwd(); err != nil {
			problems = []Problem{{Rule: "exec-run", Text: "the working folder cannot be read: " + err.Error()}}
		} else {
			call.Cwd = realPath(cwd)
			problems = Check(cfg, call)
		}
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(os.Stderr, "ERROR %s\n", p)
		}
		os.Exit(1)
	}
	argv := append([]string{"tofu"}, os.Args[1:]...)
	err := syscall.Exec(cfg.Tofu, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "ERROR tofu: exec-run: %s cannot be started: %v\n", cfg.Tofu, err)
	os.Exit(1)
}

func loadConfig() (*Config, string) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return nil, "the guard cannot find its own executable (/proc/self/exe): " + err.Error()
	}
	path := filepath.Join(filepath.Dir(exe), ConfigName)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "no configuration beside the guard (" + path + ")"
	}
	var cfg Config
	if err := json.Unmarshal(data, &cfg); err != nil || cfg.Format != 1 || cfg.Tofu == "" {
		return nil, "the guard's configuration " + path + " cannot be read"
	}
	return &cfg, ""
}

func environ(pairs []string) map[string]string {
	out := make(map[string]string, len(pairs))
	for _, kv := range pairs {
		if i := strings.IndexByte(kv, '='); i > 0 {
			out[kv[:i]] = kv[i+1:]
		}
	}
	return out
}

// parentEnv is the environment the parent process started with, when the parent is
// the pinned Terragrunt.
func parentEnv(terragrunt string) (map[string]string, string) {
	ppid := os.Getppid()
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", ppid))
	if err != nil {
		return nil, "the process that started OpenTofu cannot be identified: " + err.Error()
	}
	if terragrunt != "" && realPath(exe) != realPath(terragrunt) {
		return nil, fmt.Sprintf("OpenTofu was started by %s, not by the pinned Terragrunt (%s)", exe, terragrunt)
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", ppid))
	if err != nil {
		return nil, "the environment Terragrunt started with cannot be read: " + err.Error()
	}
	var pairs []string
	for _, kv := range bytes.Split(data, []byte{0}) {
		if len(kv) > 0 {
			pairs = append(pairs, string(kv))
		}
	}
	return environ(pairs), ""
}

func realPath(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return filepath.Clean(path)
}

// ---------------------------------------------------------------------------- the checks

// Check is every problem of one call: where it runs, its arguments, its environment,
// the working copy and the recorded backend.
func Check(cfg *Config, call Call) []Problem {
	cmd, rest := command(call.Args)
	dir, unit := findUnit(cfg, call.Cwd)
	name := ""
	if unit != nil {
		name = unit.Path
	}
	if cmd == "version" {
		return append(checkArgs(cmd, rest, name, unit, call), checkEnv(name, unit, call)...)
	}
	if unit == nil {
		return []Problem{{Rule: "exec-run", Text: fmt.Sprintf("OpenTofu would run `%s` in %s, which is no working copy of a unit this run prepared", cmd, call.Cwd),
			Fix: "remove download_dir (and TG_DOWNLOAD_DIR): a unit's working copy is UNIT/.terragrunt-cache"}}
	}
	var out []Problem
	out = append(out, checkArgs(cmd, rest, name, unit, call)...)
	out = append(out, checkEnv(name, unit, call)...)
	if unit.Module == nil {
		out = append(out, Problem{name, "working-copy", "the pipeline did not prepare this unit's check", "plan it through `invoke plan`"})
		return out
	}
	root, wc := checkWorkingCopy(unit, dir, call.Cwd)
	out = append(out, wc...)
	if root != "" {
		out = append(out, checkNullVars(unit, call.Cwd)...)
	}
	if usesState(cmd) {
		out = append(out, checkBackend(unit, call)...)
	}
	return out
}

// command is the OpenTofu command of “args“ ("state list", "providers lock", "plan",
// "version"...) and the arguments after it.
func command(args []string) (string, []string) {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		name := flagName(args[i])
		if name == "version" || name == "v" {
			return "version", args[i+1:]
		}
		if name != "chdir" && name != "help" && name != "h" {
			break
		}
		i++
	}
	if i > 0 {
		// a global option before the command (-chdir moves OpenTofu elsewhere)
		return "global " + flagName(args[0]), args
	}
	if len(args) == 0 {
		return "", nil
	}
	cmd := args[0]
	if (cmd == "state" || cmd == "providers" || cmd == "workspace") && len(args) > 1 && !strings.HasPrefix(args[1], "-") {
		return cmd + " " + args[1], args[2:]
	}
	return cmd, args[1:]
}

func flagName(arg string) string {
	name := strings.TrimLeft(arg, "-")
	if i := strings.IndexByte(name, '='); i >= 0 {
		name = name[:i]
	}
	return name
}

func usesState(cmd string) bool {
	switch cmd {
	case "version", "init", "validate", "providers", "providers lock", "providers schema":
		return false
	}
	return true
}

// findUnit is the unit whose working copy (UNIT/.terragrunt-cache/...) or folder holds
// “cwd“, and that unit's folder.
func findUnit(cfg *Config, cwd string) (string, *Unit) {
	for dir := cwd; ; dir = filepath.Dir(dir) {
		if filepath.Base(dir) == ".terragrunt-cache" {
			parent := filepath.Dir(dir)
			return parent, cfg.Units[parent]
		}
		if dir == "/" || dir == "." {
			break
		}
	}
	return cwd, cfg.Units[cwd]
}

// ---------------------------------------------------------------------------- arguments

type flagRule struct {
	value bool // takes a value (-name=value or -name value)
	once  bool // at most once
	check func(unit *Unit, call Call, value string) string
}

var common = map[string]flagRule{
	"no-color":         {},
	"compact-warnings": {},
	"concise":          {},
	"json":             {},
	"input":            {},
}

func with(extra map[string]flagRule) map[string]flagRule {
	out := map[string]flagRule{}
	for k, v := range common {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

var varFlags = map[string]flagRule{
	"var-file": {value: true, check: checkVarFile},
	"var":      {value: true, check: checkVarArg},
}

func merged(maps ...map[string]flagRule) map[string]flagRule {
	out := map[string]flagRule{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// commands: the OpenTofu commands the pipeline's Terragrunt runs, their allowed options
// and how many positional arguments they take (-1: any).
var commands = map[string]struct {
	flags       map[string]flagRule
	positionals int
}{
	"version": {map[string]flagRule{"json": {}}, 0},
	"init": {with(map[string]flagRule{
		"lock-timeout":   {value: true, once: true},
		"lockfile":       {value: true, once: true, check: checkLockfile},
		"backend-config": {value: true, check: checkBackendConfig},
	}), 0},
	"plan": {merged(with(map[string]flagRule{
		"lock":              {},
		"lock-timeout":      {value: true, once: true},
		"out":               {value: true, once: true},
		"json-into":         {value: true, once: true},
		"destroy":           {},
		"detailed-exitcode": {},
		"parallelism":       {value: true, once: true},
	}), varFlags), 0},
	"apply": {merged(with(map[string]flagRule{
		"auto-approve": {},
		"lock-timeout": {value: true, once: true},
		"json-into":    {value: true, once: true},
		"parallelism":  {value: true, once: true},
	}), varFlags), 1},
	"show":             {with(nil), 1},
	"output":           {with(map[string]flagRule{"raw": {}}), 1},
	"validate":         {with(nil), 0},
	"state list":       {with(map[string]flagRule{"id": {value: true}}), -1},
	"state pull":       {with(nil), 0},
	"state show":       {with(nil), 1},
	"providers":        {with(nil), 0},
	"providers schema": {with(nil), 0},
	"providers lock": {with(map[string]flagRule{
		"platform":   {value: true},
		"fs-mirror":  {value: true, once: true},
		"net-mirror": {value: true, once: true},
	}), -1},
}

func argsProblem(unit, text string) Problem {
	return Problem{unit, "exec-args", text, "remove it from the unit's extra_arguments (and its *_var_files): the pipeline passes OpenTofu's arguments"}
}

func checkArgs(cmd string, args []string, name string, unit *Unit, call Call) []Problem {
	spec, known := commands[cmd]
	if !known {
		shown := cmd
		if strings.HasPrefix(cmd, "global ") {
			shown = "-" + strings.TrimPrefix(cmd, "global ")
			return []Problem{argsProblem(name, fmt.Sprintf("OpenTofu would run with %s before its command: it would read another folder than the unit's working copy", shown))}
		}
		return []Problem{argsProblem(name, fmt.Sprintf("`tofu %s` is not a command the pipeline runs", shown))}
	}
	var out []Problem
	seen := map[string]bool{}
	positionals := 0
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			positionals += len(args) - i - 1
			break
		}
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			positionals++
			continue
		}
		flag := flagName(arg)
		rule, ok := spec.flags[flag]
		if !ok {
			out = append(out, argsProblem(name, fmt.Sprintf("`tofu %s` would get -%s, which the pipeline does not allow (it can move the state, the working folder, the providers or what is planned)", cmd, flag)))
			if !strings.Contains(arg, "=") && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && valueFlags[flag] {
				i++ // its value
			}
			continue
		}
		value := ""
		if rule.value {
			if j := strings.IndexByte(arg, '='); j >= 0 {
				value = arg[j+1:]
			} else if i+1 < len(args) {
				i++
				value = args[i]
			}
		}
		if rule.once && seen[flag] {
			out = append(out, argsProblem(name, fmt.Sprintf("`tofu %s` would get -%s twice: the pipeline's value could be replaced", cmd, flag)))
		}
		seen[flag] = true
		if rule.check != nil {
			if why := rule.check(unit, call, value); why != "" {
				out = append(out, argsProblem(name, fmt.Sprintf("`tofu %s`: %s", cmd, why)))
			}
		}
	}
	if spec.positionals >= 0 && positionals > spec.positionals {
		out = append(out, argsProblem(name, fmt.Sprintf("`tofu %s` would get %d argument(s) besides its options, at most %d expected", cmd, positionals, spec.positionals)))
	}
	return out
}

// valueFlags: options of OpenTofu that take a value, to skip it when refusing one.
var valueFlags = map[string]bool{
	"state": true, "state-out": true, "backup": true, "plugin-dir": true, "target": true,
	"replace": true, "exclude": true, "target-file": true, "exclude-file": true,
	"from-module": true, "test-directory": true, "chdir": true, "generate-config-out": true,
}

func checkLockfile(_ *Unit, _ Call, value string) string {
	if value != "readonly" {
		return fmt.Sprintf("-lockfile=%s: the lock files are committed and read only", value)
	}
	return ""
}

func checkBackendConfig(unit *Unit, _ Call, value string) string {
	key, val, ok := strings.Cut(value, "=")
	if unit == nil || unit.Backend == nil || !ok {
		return fmt.Sprintf("-backend-config=%s replaces the state backend the root file declares", value)
	}
	want, has := unit.Backend.Config[key]
	if !has || !sameValue(val, want) {
		return fmt.Sprintf("-backend-config sets %s to another value than the root file declares for the unit: its state would be elsewhere", key)
	}
	return ""
}

// inside: “path“ (relative to “cwd“) resolves inside “root“.
func inside(path, cwd, root string) bool {
	if !filepath.IsAbs(path) {
		path = filepath.Join(cwd, path)
	}
	real := realPath(path)
	return real == root || strings.HasPrefix(real, root+string(filepath.Separator))
}

func checkVarFile(unit *Unit, call Call, value string) string {
	root := call.Cwd
	if unit != nil && unit.Module != nil {
		if r := checkoutRoot(call.Cwd, unit.Module.Subdir); r != "" {
			root = r
		}
	}
	if !inside(value, call.Cwd, root) {
		return fmt.Sprintf("-var-file=%s is outside the unit's working copy (only the module's own variable files are read)", value)
	}
	return ""
}

func checkVarArg(unit *Unit, _ Call, value string) string {
	name, _, _ := strings.Cut(value, "=")
	if !ownVariable(unit, name) {
		return fmt.Sprintf("-var sets %s, which is not a variable of the unit's module", name)
	}
	return ""
}

func ownVariable(unit *Unit, name string) bool {
	if unit == nil || strings.HasPrefix(strings.ToLower(name), "iac_") {
		return false // the pipeline's own variables (the encryption key) are never a unit's
	}
	for _, v := range unit.Variables {
		if v == name {
			return true
		}
	}
	return false
}

// ---------------------------------------------------------------------------- environment

// identityVars: what Terragrunt sets after assuming a unit's iam_role.
var identityVars = map[string]bool{
	"AWS_ACCESS_KEY_ID": true, "AWS_SECRET_ACCESS_KEY": true,
	"AWS_SESSION_TOKEN": true, "AWS_SECURITY_TOKEN": true,
}

func checkEnv(name string, unit *Unit, call Call) []Problem {
	var changed []string
	for key, value := range call.Env {
		if base, ok := call.Base[key]; ok && base == value {
			continue
		}
		if strings.HasPrefix(key, "TF_VAR_") && ownVariable(unit, strings.TrimPrefix(key, "TF_VAR_")) {
			continue
		}
		if identityVars[key] && unit != nil && unit.Identity {
			continue
		}
		changed = append(changed, key)
	}
	sort.Strings(changed)
	var out []Problem
	for _, key := range changed {
		what := "sets"
		if _, ok := call.Base[key]; ok {
			what = "changes"
		}
		why := "only TF_VAR_ variables of the module's own variables may be set for a unit"
		if strings.HasPrefix(key, "TF_VAR_") {
			why = "it is not a variable of the unit's module (the pipeline's own variables are never a unit's)"
		}
		out = append(out, Problem{name, "exec-env", fmt.Sprintf("OpenTofu's environment %s %s: %s", what, key, why),
			"remove it from the unit's env_vars and inputs; the pipeline sets OpenTofu's environment"})
	}
	return out
}

// ---------------------------------------------------------------------------- working copy

// codeSuffixes: the files OpenTofu reads as configuration or variable values.
var codeSuffixes = []string{".tf", ".tf.json", ".tofu", ".tofu.json", ".tfvars", ".tfvars.json"}

func isCode(name string) bool {
	for _, s := range codeSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// nullVars: the files Terragrunt writes for inputs whose value is null (checked apart).
var nullVars = map[string]bool{
	".terragrunt-null-vars.auto.tfvars.json": true,
	"terragrunt-null-vars.auto.tfvars.json":  true,
}

func blobSHA(data []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// Normalized is the SHA-256 of a generated file's contents with spaces, tabs and blank
// lines left out: Terragrunt formats the generated OpenTofu files (hcl fmt), which
// moves only those.
func Normalized(data []byte) string {
	var lines []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.Map(func(r rune) rune {
			if r == ' ' || r == '\t' || r == '\r' {
				return -1
			}
			return r
		}, line)
		if line != "" {
			lines = append(lines, line)
		}
	}
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:])
}

func checkoutRoot(workDir, subdir string) string {
	subdir = strings.Trim(subdir, "/")
	if subdir == "" {
		return workDir
	}
	parts := strings.Split(strings.TrimRight(workDir, "/"), "/")
	sub := strings.Split(subdir, "/")
	if len(parts) <= len(sub) {
		return ""
	}
	for i := range sub {
		if parts[len(parts)-len(sub)+i] != sub[i] {
			return ""
		}
	}
	return strings.Join(parts[:len(parts)-len(sub)], "/")
}

func readLinkOrFile(path string, info fs.FileInfo) []byte {
	if info.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(path)
		if err != nil {
			return nil
		}
		return []byte(target)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return data
}

// checkWorkingCopy: the checkout OpenTofu reads is the pinned module plus the files
// the root file generates with the contents it declares (docs/rules.md, working-copy).
func checkWorkingCopy(unit *Unit, unitDir, cwd string) (string, []Problem) {
	m := unit.Module
	name := unit.Path
	if m.Error != "" {
		return "", []Problem{{name, "working-copy", m.Error, ""}}
	}
	root := checkoutRoot(cwd, m.Subdir)
	if root == "" {
		return "", []Problem{{name, "working-copy", fmt.Sprintf("Terragrunt ran in %s, not in the module folder %s of %s", cwd, m.Subdir, m.Pinned),
			fmt.Sprintf("delete %s/.terragrunt-cache and plan again", name)}}
	}
	type entry struct{ sha, norm string }
	found := map[string]entry{}
	subdir := strings.Trim(m.Subdir, "/")
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if path != root && (d.Name() == ".git" || d.Name() == ".terraform") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		_, wanted := m.Files[rel]
		if !wanted && !isCode(d.Name()) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		data := readLinkOrFile(path, info)
		found[rel] = entry{blobSHA(data), Normalized(data)}
		return nil
	})
	own := map[string]bool{}
	if entries, err := os.ReadDir(unitDir); err == nil {
		for _, e := range entries {
			if e.Type().IsRegular() {
				own[e.Name()] = true
			}
		}
	}
	extra := map[string]bool{}
	for _, e := range unit.Extra {
		extra[e] = true
	}
	var out []Problem
	fix := fmt.Sprintf("delete %s/.terragrunt-cache and plan again", name)
	at := ""
	if m.Commit != "" {
		at = " (commit " + m.Commit + ")"
	}
	paths := make([]string, 0, len(m.Files))
	for p := range m.Files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		got, ok := found[p]
		if !ok {
			out = append(out, Problem{name, "working-copy", fmt.Sprintf("%s of %s is missing from the working copy", p, m.Pinned), fix})
		} else if got.sha != m.Files[p] {
			out = append(out, Problem{name, "working-copy", fmt.Sprintf("%s in the working copy differs from %s%s", p, m.Pinned, at), fix + " (Terragrunt fetches the tag again)"})
		}
	}
	rels := make([]string, 0, len(found))
	for p := range found {
		rels = append(rels, p)
	}
	sort.Strings(rels)
	for _, p := range rels {
		if _, ok := m.Files[p]; ok {
			continue
		}
		folder, file := "", p
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			folder, file = p[:i], p[i+1:]
		}
		if folder == subdir {
			if want, ok := m.Generated[file]; ok {
				if want != "" && want != found[p].norm {
					out = append(out, Problem{name, "working-copy", fmt.Sprintf("%s in the working copy is not what the root file generates for this unit", file),
						"remove the generate block (or its override) from the unit: only the root file generates files, with the contents it declares"})
				}
				continue
			}
			if nullVars[file] || extra[file] {
				continue
			}
			if own[file] {
				out = append(out, Problem{name + "/" + file + ":1", "working-copy", "OpenTofu code beside terragrunt.hcl is copied into the module's folder and planned",
					"move it into the module's repository and pin the new tag (units hold configuration only)"})
				continue
			}
		}
		out = append(out, Problem{name, "working-copy", fmt.Sprintf("%s in the working copy is neither a file of %s nor one the root file generates; OpenTofu would read it", p, m.Pinned), fix})
	}
	return root, out
}

// checkNullVars: the null-inputs files of the module folder set only the module's own
// variables, and only to null (what an input `x = null` does).
func checkNullVars(unit *Unit, cwd string) []Problem {
	var out []Problem
	names := make([]string, 0, len(nullVars))
	for file := range nullVars {
		names = append(names, file)
	}
	sort.Strings(names)
	for _, file := range names {
		data, err := os.ReadFile(filepath.Join(cwd, file))
		if err != nil {
			continue
		}
		var values map[string]json.RawMessage
		if json.Unmarshal(data, &values) != nil {
			out = append(out, Problem{unit.Path, "working-copy", file + " in the working copy is not the null inputs Terragrunt writes", "remove it from the unit folder"})
			continue
		}
		keys := make([]string, 0, len(values))
		for k := range values {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if string(bytes.TrimSpace(values[k])) != "null" || !ownVariable(unit, k) {
				out = append(out, Problem{unit.Path, "working-copy", fmt.Sprintf("%s in the working copy sets %s, which is not a null input of a module variable", file, k),
					"remove the file from the unit folder: inputs are set in terragrunt.hcl"})
			}
		}
	}
	return out
}

// ---------------------------------------------------------------------------- backend

func checkBackend(unit *Unit, call Call) []Problem {
	name := unit.Path
	fix := "remove what moves it (a remote_state, backend override or -backend-config); the root file keys every unit's state by its path"
	if unit.Backend == nil {
		why := unit.BackendError
		if why == "" {
			why = "the root file declares no backend the pipeline could work out for this unit"
		}
		return []Problem{{name, "exec-backend", why, ""}}
	}
	dataDir := ".terraform"
	if d, ok := call.Env["TF_DATA_DIR"]; ok && d != "" {
		dataDir = d
	}
	if !filepath.IsAbs(dataDir) {
		dataDir = filepath.Join(call.Cwd, dataDir)
	}
	record := filepath.Join(dataDir, "terraform.tfstate")
	data, err := os.ReadFile(record)
	if err != nil {
		return []Problem{{name, "exec-backend", "OpenTofu recorded no backend after init, so the state it would use is not known", fix}}
	}
	var doc struct {
		Backend *struct {
			Type   string         `json:"type"`
			Config map[string]any `json:"config"`
		} `json:"backend"`
	}
	if json.Unmarshal(data, &doc) != nil || doc.Backend == nil {
		return []Problem{{name, "exec-backend", "OpenTofu recorded no backend after init, so the state it would use is not known", fix}}
	}
	if doc.Backend.Type != unit.Backend.Type {
		return []Problem{{name, "exec-backend", fmt.Sprintf("OpenTofu initialised the %s backend, not the %s backend the root file declares for the unit", doc.Backend.Type, unit.Backend.Type), fix}}
	}
	got, want := given(doc.Backend.Config), given(unit.Backend.Config)
	keys := map[string]bool{}
	for k := range got {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var out []Problem
	for _, k := range sorted {
		g, gok := got[k]
		w, wok := want[k]
		switch {
		case !gok:
			out = append(out, Problem{name, "exec-backend", fmt.Sprintf("the backend OpenTofu recorded has no %s, which the root file sets for the unit", k), fix})
		case !wok:
			out = append(out, Problem{name, "exec-backend", fmt.Sprintf("the backend OpenTofu recorded sets %s, which the root file does not: it changes where or as whom the state is read and written", k), fix})
		case !sameValue(g, w):
			out = append(out, Problem{name, "exec-backend", fmt.Sprintf("the backend OpenTofu recorded has another %s than the root file declares for the unit: its state would be elsewhere", k), fix})
		}
	}
	return out
}

// given: a backend's settings without the ones OpenTofu records as not set.
func given(config map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range config {
		if !empty(v) {
			out[k] = v
		}
	}
	return out
}

func empty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case map[string]any:
		return len(given(t)) == 0
	case []any:
		return len(t) == 0
	case bool:
		return !t
	}
	return false
}

// sameValue compares a recorded (or argument) value with a declared one: bools and
// numbers may be written as strings.
func sameValue(got, want any) bool {
	return canonical(got) == canonical(want)
}

func canonical(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		if b, err := strconv.ParseBool(t); err == nil && (t == "true" || t == "false") {
			return strconv.FormatBool(b)
		}
		return t
	case bool:
		return strconv.FormatBool(t)
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case map[string]any:
		g := given(t)
		keys := make([]string, 0, len(g))
		for k := range g {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, strconv.Quote(k)+":"+strconv.Quote(canonical(g[k])))
		}
		return "{" + strings.Join(parts, ",") + "}"
	case []any:
		parts := make([]string, 0, len(t))
		for _, e := range t {
			parts = append(parts, strconv.Quote(canonical(e)))
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	data, _ := json.Marshal(v)
	return string(data)
}
