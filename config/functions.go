package config

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// functions returns the functions configurations may call, under Terraform's names. Paths
// given to file and templatefile are relative to the configuration directory.
func functions(dir string) map[string]function.Function {
	fs := map[string]function.Function{
		"abs": stdlib.AbsoluteFunc, "ceil": stdlib.CeilFunc, "floor": stdlib.FloorFunc,
		"max": stdlib.MaxFunc, "min": stdlib.MinFunc, "parseint": stdlib.ParseIntFunc,
		"pow": stdlib.PowFunc, "signum": stdlib.SignumFunc, "log": stdlib.LogFunc,
		"chomp": stdlib.ChompFunc, "format": stdlib.FormatFunc, "formatlist": stdlib.FormatListFunc,
		"indent": stdlib.IndentFunc, "join": stdlib.JoinFunc, "lower": stdlib.LowerFunc,
		"upper": stdlib.UpperFunc, "replace": stdlib.ReplaceFunc, "regex_replace": stdlib.RegexReplaceFunc,
		"split": stdlib.SplitFunc, "strrev": stdlib.ReverseFunc, "substr": stdlib.SubstrFunc,
		"title": stdlib.TitleFunc, "trim": stdlib.TrimFunc, "trimprefix": stdlib.TrimPrefixFunc,
		"trimsuffix": stdlib.TrimSuffixFunc, "trimspace": stdlib.TrimSpaceFunc,
		"regex": stdlib.RegexFunc, "regexall": stdlib.RegexAllFunc, "strlen": stdlib.StrlenFunc,
		"chunklist": stdlib.ChunklistFunc, "coalesce": stdlib.CoalesceFunc, "coalescelist": stdlib.CoalesceListFunc,
		"compact": stdlib.CompactFunc, "concat": stdlib.ConcatFunc, "contains": stdlib.ContainsFunc,
		"distinct": stdlib.DistinctFunc, "element": stdlib.ElementFunc, "flatten": stdlib.FlattenFunc,
		"index": stdlib.IndexFunc, "keys": stdlib.KeysFunc, "length": stdlib.LengthFunc,
		"lookup": stdlib.LookupFunc, "merge": stdlib.MergeFunc, "range": stdlib.RangeFunc,
		"reverse": stdlib.ReverseListFunc, "setintersection": stdlib.SetIntersectionFunc,
		"setproduct": stdlib.SetProductFunc, "setsubtract": stdlib.SetSubtractFunc,
		"setunion": stdlib.SetUnionFunc, "slice": stdlib.SliceFunc, "sort": stdlib.SortFunc,
		"values": stdlib.ValuesFunc, "zipmap": stdlib.ZipmapFunc,
		"jsonencode": stdlib.JSONEncodeFunc, "jsondecode": stdlib.JSONDecodeFunc,
		"csvdecode": stdlib.CSVDecodeFunc, "formatdate": stdlib.FormatDateFunc, "timeadd": stdlib.TimeAddFunc,
		"tostring": makeToFunc(cty.String), "tonumber": makeToFunc(cty.Number), "tobool": makeToFunc(cty.Bool),
		"tolist": makeToFunc(cty.List(cty.DynamicPseudoType)), "toset": makeToFunc(cty.Set(cty.DynamicPseudoType)),
		"tomap":        makeToFunc(cty.Map(cty.DynamicPseudoType)),
		"base64encode": base64EncodeFunc, "base64decode": base64DecodeFunc, "sha256": sha256Func,
		"file": fileFunc(dir), "filebase64": fileBase64Func(dir),
	}
	fs["templatefile"] = templateFileFunc(dir, fs)
	return fs
}

func makeToFunc(t cty.Type) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "v", Type: cty.DynamicPseudoType, AllowNull: true}},
		Type:   function.StaticReturnType(t),
		Impl: func(args []cty.Value, retType cty.Type) (cty.Value, error) {
			return convertTo(args[0], retType)
		},
	})
}

var base64EncodeFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "str", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return cty.StringVal(base64.StdEncoding.EncodeToString([]byte(args[0].AsString()))), nil
	},
})

var base64DecodeFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "str", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		b, err := base64.StdEncoding.DecodeString(args[0].AsString())
		if err != nil {
			return cty.UnknownVal(cty.String), fmt.Errorf("not valid base64: %w", err)
		}
		if !utf8.Valid(b) {
			return cty.UnknownVal(cty.String), fmt.Errorf("the decoded bytes are not UTF-8")
		}
		return cty.StringVal(string(b)), nil
	},
})

var sha256Func = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "str", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		s := sha256.Sum256([]byte(args[0].AsString()))
		return cty.StringVal(hex.EncodeToString(s[:])), nil
	},
})

func readRelative(dir, p string) ([]byte, error) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	b, err := readBounded(p)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", p, err)
	}
	return b, nil
}

func fileFunc(dir string) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			b, err := readRelative(dir, args[0].AsString())
			if err != nil {
				return cty.UnknownVal(cty.String), err
			}
			if !utf8.Valid(b) {
				return cty.UnknownVal(cty.String), fmt.Errorf("%s is not UTF-8 text: give its bytes as content_base64 = filebase64(%q)", args[0].AsString(), args[0].AsString())
			}
			return cty.StringVal(string(b)), nil
		},
	})
}

// fileBase64Func reads a file of any bytes as base64, as Terraform's filebase64 does: for
// a file block's content_base64, since an HCL string holds UTF-8 text only.
func fileBase64Func(dir string) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			b, err := readRelative(dir, args[0].AsString())
			if err != nil {
				return cty.UnknownVal(cty.String), err
			}
			return cty.StringVal(base64.StdEncoding.EncodeToString(b)), nil
		},
	})
}

// templateFileFunc renders a file as an HCL template, as Terraform's templatefile does: the
// vars object is its only variables; it may call the other functions but not itself.
func templateFileFunc(dir string, others map[string]function.Function) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}, {Name: "vars", Type: cty.DynamicPseudoType}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			name := args[0].AsString()
			b, err := readRelative(dir, name)
			if err != nil {
				return cty.UnknownVal(cty.String), err
			}
			if d := checkNesting(b, name, true); d != nil {
				return cty.UnknownVal(cty.String), hcl.Diagnostics{d}
			}
			expr, diags := hclsyntax.ParseTemplate(b, name, hcl.Pos{Line: 1, Column: 1})
			if diags.HasErrors() {
				return cty.UnknownVal(cty.String), diags
			}
			vars := map[string]cty.Value{}
			if v := args[1]; !v.IsNull() && (v.Type().IsObjectType() || v.Type().IsMapType()) {
				vars = v.AsValueMap()
			} else if !v.IsNull() {
				return cty.UnknownVal(cty.String), fmt.Errorf("vars must be an object, not %s", v.Type().FriendlyName())
			}
			fns := make(map[string]function.Function, len(others))
			for k, f := range others {
				if k != "templatefile" {
					fns[k] = f
				}
			}
			v, diags := expr.Value(&hcl.EvalContext{Variables: vars, Functions: fns})
			if diags.HasErrors() {
				return cty.UnknownVal(cty.String), diags
			}
			s, err := convertTo(v, cty.String)
			if err != nil {
				return cty.UnknownVal(cty.String), fmt.Errorf("template result: %w", err)
			}
			return s, nil
		},
	})
}
