// Command luacheck runs an Argo CD resource health script the way Argo CD does
// (gopher-lua, Lua 5.1) and prints the health it returns as JSON.
//
//	luacheck [-open-libs] SCRIPT.lua [OBJECT.json]   (the object on stdin without OBJECT.json)
//	luacheck -lines   (stdin: one {"script": TEXT, "object": OBJECT, "openLibs": BOOL} a line;
//	                   stdout: one {"health": HEALTH} or {"error": TEXT} a line)
//
// What it mirrors from Argo CD's util/lua (the version hack/argocd.sh pins):
//   - a state without the standard libraries, then only package, base and table opened
//     (Argo CD also opens a reduced "os"; it is absent here, so a script that needs it fails);
//     -open-libs: every standard library, as Argo CD gives its built-in scripts and the
//     argocd-cm scripts marked resource.customizations.useOpenLibs.<group>_<kind>;
//   - the object decoded as the API server's JSON is by Kubernetes' unstructured decoder
//     (integers int64, other numbers float64) and handed over as the global "obj": objects
//     become hash tables, arrays sequences (1-based), JSON null nil;
//   - the script run as a chunk, with a 1 s deadline, its last returned value read;
//   - a table result encoded with gopher-json, read into {status, message}; a status other
//     than Healthy, Progressing, Degraded, Suspended, Missing or Unknown becomes
//     Unknown / "Lua returned an invalid health status"; a table that does not decode into
//     that shape ({} encodes as []) gives an empty health; nil gives null; anything else is
//     an error.
//
// Output: one JSON line on stdout. Exit 1 on a Lua or input error (message on stderr);
// with -lines, exit 1 only when a line is not such a JSON object.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	lua "github.com/yuin/gopher-lua"
	luajson "layeh.com/gopher-json"
)

type health struct {
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

var validStatus = map[string]bool{
	"Healthy": true, "Progressing": true, "Degraded": true, "Suspended": true, "Missing": true, "Unknown": true,
}

// unstructured decodes JSON as Kubernetes' unstructured decoder does: whole numbers int64.
func unstructured(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return numbers(v), nil
}

func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = numbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = numbers(x[k])
		}
	}
	return v
}

// toLua converts a decoded JSON value into a Lua value.
func toLua(l *lua.LState, v any) lua.LValue {
	switch x := v.(type) {
	case bool:
		return lua.LBool(x)
	case string:
		return lua.LString(x)
	case int64:
		return lua.LNumber(x)
	case float64:
		return lua.LNumber(x)
	case []any:
		t := l.CreateTable(len(x), 0)
		for _, item := range x {
			t.Append(toLua(l, item))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(x))
		for k, item := range x {
			t.RawSetH(lua.LString(k), toLua(l, item))
		}
		return t
	}
	return lua.LNil
}

func run(script string, object []byte, openLibs bool) ([]byte, error) {
	obj, err := unstructured(object)
	if err != nil {
		return nil, fmt.Errorf("object: %w", err)
	}
	l := lua.NewState(lua.Options{SkipOpenLibs: !openLibs})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(script); err != nil {
		return nil, err
	}
	ret := l.Get(-1)
	switch ret.Type() {
	case lua.LTNil:
		return []byte("null"), nil
	case lua.LTTable:
	default:
		return nil, fmt.Errorf("expect table output from Lua script, not %s", ret.Type())
	}
	raw, err := luajson.Encode(ret)
	if err != nil {
		return nil, err
	}
	var h health
	var typeErr *json.UnmarshalTypeError
	switch err := json.Unmarshal(raw, &h); {
	case errors.As(err, &typeErr): // e.g. {} (encoded as []): an empty health, as Argo CD gives
		h = health{}
	case err != nil:
		return nil, err
	case !validStatus[h.Status]:
		h = health{Status: "Unknown", Message: "Lua returned an invalid health status"}
	}
	return json.Marshal(h)
}

type job struct {
	Script   string          `json:"script"`
	Object   json.RawMessage `json:"object"`
	OpenLibs bool            `json:"openLibs"`
}

// lines runs one job a line, so that many objects cost one process.
func lines() error {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var j job
		if err := json.Unmarshal(in.Bytes(), &j); err != nil {
			return err
		}
		res := map[string]any{}
		if h, err := run(j.Script, j.Object, j.OpenLibs); err != nil {
			res["error"] = err.Error()
		} else {
			res["health"] = json.RawMessage(h)
		}
		if err := out.Encode(res); err != nil {
			return err
		}
	}
	return in.Err()
}

func main() {
	openLibs := flag.Bool("open-libs", false, "open every standard library (Argo CD's built-in scripts)")
	batch := flag.Bool("lines", false, "JSON lines in, JSON lines out")
	flag.Parse()
	if *batch {
		if err := lines(); err != nil {
			fmt.Fprintln(os.Stderr, "luacheck:", err)
			os.Exit(1)
		}
		return
	}
	args := flag.Args()
	if len(args) < 1 || len(args) > 2 {
		fmt.Fprintln(os.Stderr, "usage: luacheck [-open-libs] SCRIPT.lua [OBJECT.json]  (object on stdin by default)")
		os.Exit(2)
	}
	script, err := os.ReadFile(args[0])
	if err == nil {
		var object []byte
		if len(args) == 2 {
			object, err = os.ReadFile(args[1])
		} else {
			object, err = io.ReadAll(os.Stdin)
		}
		if err == nil {
			var out []byte
			if out, err = run(string(script), object, *openLibs); err == nil {
				fmt.Println(string(out))
				return
			}
		}
	}
	fmt.Fprintln(os.Stderr, "luacheck:", err)
	os.Exit(1)
}
