package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/strata-hpc/strata/layout"
)

// option is one configuration key of a daemon command. It is set, in
// increasing precedence, by the --config TOML file (key), the environment
// (STRATA_ + KEY in upper case) and the command line (--key with dashes).
type option struct {
	key  string // snake_case TOML key
	help string
	def  string // default, for --help
	set  func(string) error
}

func (o option) flag() string { return strings.ReplaceAll(o.key, "_", "-") }
func (o option) env() string  { return "STRATA_" + strings.ToUpper(o.key) }

// options is the configuration of one daemon command.
type options struct {
	cmd  string
	list []option
	// flags are the values given on the command line, in order, applied
	// last so that they win over the file and the environment.
	flags []keyValue
	file  *string
}

type keyValue struct{ key, value string }

func newOptions(cmd string) *options { return &options{cmd: cmd} }

func (o *options) add(key, help, def string, set func(string) error) {
	o.list = append(o.list, option{key: key, help: help, def: def, set: set})
}

func (o *options) str(key, help string, p *string) {
	o.add(key, help, *p, func(v string) error { *p = v; return nil })
}

// boolean declares a key that is true (true, 1, yes) or false (false, 0,
// no, empty).
func (o *options) boolean(key, help string, p *bool) {
	o.add(key, help, strconv.FormatBool(*p), func(v string) error {
		switch v {
		case "true", "1", "yes":
			*p = true
		case "false", "0", "no", "":
			*p = false
		default:
			return fmt.Errorf("%s: %q is not true or false", key, v)
		}
		return nil
	})
}

func (o *options) dur(key, help string, p *time.Duration) {
	o.add(key, help, p.String(), func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%q is not a duration like 500ms, 5s or 10m", v)
		}
		*p = d
		return nil
	})
}

func (o *options) size(key, help string, p *uint64) {
	o.add(key, help, layout.FormatSize(int64(*p)), func(v string) error {
		n, err := layout.ParseSize(v)
		if err != nil {
			return err
		}
		*p = uint64(n)
		return nil
	})
}

func (o *options) intSize(key, help string, p *int) {
	o.add(key, help, layout.FormatSize(int64(*p)), func(v string) error {
		n, err := layout.ParseSize(v)
		if err != nil || n > 1<<30 {
			return fmt.Errorf("%q is not a size like 64K", v)
		}
		*p = int(n)
		return nil
	})
}

func (o *options) uint(key, help string, p *uint64) {
	o.add(key, help, strconv.FormatUint(*p, 10), func(v string) error {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", v)
		}
		*p = n
		return nil
	})
}

func (o *options) int(key, help string, p *int) {
	o.add(key, help, strconv.Itoa(*p), func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a number", v)
		}
		*p = n
		return nil
	})
}

// register adds every option as a flag of f, and --config.
func (o *options) register(f *cmdFlags) {
	for _, op := range o.list {
		help := fmt.Sprintf("%s (env %s)", op.help, op.env())
		if op.def != "" {
			help += fmt.Sprintf(" (default %q)", op.def)
		}
		key := op.key
		f.Func(op.flag(), help, func(v string) error {
			o.flags = append(o.flags, keyValue{key, v})
			return nil
		})
	}
	o.file = f.String("config", "", "TOML file with any of the keys above, snake_case (env STRATA_CONFIG)")
}

// apply sets the options from the file, the environment and the flags.
func (o *options) apply(a *app) error {
	byKey := map[string]option{}
	for _, op := range o.list {
		byKey[op.key] = op
	}
	file := *o.file
	if file == "" {
		file = a.env("STRATA_CONFIG")
	}
	if file != "" {
		vals, err := readConfigFile(file)
		if err != nil {
			return err
		}
		keys := make([]string, 0, len(vals))
		for k := range vals {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			op, ok := byKey[k]
			if !ok {
				return fmt.Errorf("config %s: unknown key %q for strata %s", file, k, o.cmd)
			}
			if err := op.set(vals[k]); err != nil {
				return fmt.Errorf("config %s: %s: %v", file, k, err)
			}
		}
	}
	for _, op := range o.list {
		if v := a.env(op.env()); v != "" {
			if err := op.set(v); err != nil {
				return fmt.Errorf("%s: %v", op.env(), err)
			}
		}
	}
	for _, kv := range o.flags {
		op := byKey[kv.key]
		if err := op.set(kv.value); err != nil {
			return usageErrorf(o.cmd, "--%s: %v", op.flag(), err)
		}
	}
	return nil
}

// readConfigFile reads a flat TOML file into strings per key.
func readConfigFile(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var raw map[string]any
	if err := toml.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("config %s: %v", path, err)
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		switch v := v.(type) {
		case string:
			out[k] = v
		case int64:
			out[k] = strconv.FormatInt(v, 10)
		case float64:
			out[k] = strconv.FormatFloat(v, 'f', -1, 64)
		case bool:
			out[k] = strconv.FormatBool(v)
		default:
			return nil, fmt.Errorf("config %s: %s: want a string or a number, got %T", path, k, v)
		}
	}
	return out, nil
}
