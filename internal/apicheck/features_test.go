package apicheck

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"strings"
)

// features lists the exported API of pkg, one line per feature, in the form of Go's own
// api/*.txt (cmd/api): "pkg inbox, func Open(context.Context, string, ...Option) (*Store,
// error)". name is the package as the lines name it (its path in the module). A type from
// another package is written with that package's name (context.Context, pgx.Tx); type
// parameters as $0, $1, … (their names are not API). A deprecated feature has a second line,
// "… //deprecated", so that deprecating a name is a change of the API too. The lines are
// sorted.
func features(name string, pkg *types.Package, files []*ast.File) []string {
	w := &walker{pkg: pkg, deprecated: deprecatedNames(files), seen: map[string]bool{}}
	w.scope = []string{"pkg " + name}
	for _, n := range pkg.Scope().Names() {
		if token.IsExported(n) {
			w.object(pkg.Scope().Lookup(n))
		}
	}
	out := make([]string, 0, len(w.seen))
	for f := range w.seen {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// walker writes the features of one package.
type walker struct {
	pkg        *types.Package
	deprecated map[token.Pos]bool
	scope      []string // "pkg inbox", then "type Event struct" inside a struct
	seen       map[string]bool
}

func (w *walker) emit(obj types.Object, format string, args ...any) {
	f := strings.Join(w.scope, ", ") + ", " + fmt.Sprintf(format, args...)
	if obj != nil && w.deprecated[obj.Pos()] {
		name := obj.Name()
		if v, ok := obj.(*types.Var); ok && v.Embedded() {
			name = "embedded " + w.typ(v.Type())
		}
		w.seen[strings.Join(w.scope, ", ")+", "+kindOf(obj)+name+" //deprecated"] = true
	}
	w.seen[f] = true
}

// kindOf is the word before a deprecated feature's name: "func ", "const ", … or nothing
// for a field or an interface method.
func kindOf(obj types.Object) string {
	switch obj := obj.(type) {
	case *types.Const:
		return "const "
	case *types.TypeName:
		return "type "
	case *types.Func:
		if obj.Signature().Recv() == nil {
			return "func "
		}
	case *types.Var:
		if !obj.IsField() {
			return "var "
		}
	}
	return ""
}

func (w *walker) object(obj types.Object) {
	switch obj := obj.(type) {
	case *types.Const:
		w.emit(obj, "const %s %s", obj.Name(), w.typ(obj.Type()))
		short, exact := obj.Val().String(), obj.Val().ExactString()
		if short == exact {
			w.emit(nil, "const %s = %s", obj.Name(), short)
		} else {
			w.emit(nil, "const %s = %s  // %s", obj.Name(), short, exact)
		}
	case *types.Var:
		w.emit(obj, "var %s %s", obj.Name(), w.typ(obj.Type()))
	case *types.Func:
		w.emit(obj, "func %s%s", obj.Name(), w.signature(obj.Signature()))
	case *types.TypeName:
		w.typeName(obj)
	}
}

func (w *walker) typeName(obj *types.TypeName) {
	name := obj.Name()
	if obj.IsAlias() {
		w.emit(obj, "type %s = %s", name, w.typ(obj.Type()))
		return
	}
	named := obj.Type().(*types.Named)
	if tps := named.TypeParams(); tps != nil {
		name += w.typeParams(tps, true)
	}
	switch u := named.Underlying().(type) {
	case *types.Struct:
		w.emit(obj, "type %s struct", name)
		w.inside("type "+name+" struct", func() {
			for i := range u.NumFields() {
				if f := u.Field(i); f.Exported() {
					if f.Embedded() {
						w.emit(f, "embedded %s", w.typ(f.Type()))
					} else {
						w.emit(f, "%s %s", f.Name(), w.typ(f.Type()))
					}
				}
			}
		})
	case *types.Interface:
		w.iface(obj, name, u)
		return // an interface's methods are its own lines
	default:
		w.emit(obj, "type %s %s", name, w.typ(u))
	}
	// The methods of T, then those only *T has, promoted ones included.
	vset := types.NewMethodSet(named)
	for m := range vset.Methods() {
		if m.Obj().Exported() {
			w.method(m)
		}
	}
	for m := range types.NewMethodSet(types.NewPointer(named)).Methods() {
		if m.Obj().Exported() && vset.Lookup(m.Obj().Pkg(), m.Obj().Name()) == nil {
			w.method(m)
		}
	}
}

// iface writes an interface: a line per method ("type Rows interface, Next() bool") and the
// list of its method names ("type Rows interface { Close, Err, Next, Scan }"), a constraint's
// type terms after them (which Go's cmd/api leaves out), or "unexported methods" when it has
// some: then only this package implements it, and a method may be added.
func (w *walker) iface(obj *types.TypeName, name string, it *types.Interface) {
	var names []string
	complete := true
	w.inside("type "+name+" interface", func() {
		for m := range types.NewMethodSet(it).Methods() {
			f := m.Obj().(*types.Func)
			if !f.Exported() {
				complete = false
				continue
			}
			names = append(names, f.Name())
			w.emit(f, "%s%s", f.Name(), w.signature(f.Signature()))
		}
	})
	slices.Sort(names)
	names = append(names, w.embeddeds(it)...)
	switch {
	case !complete:
		w.emit(obj, "type %s interface, unexported methods", name)
	case len(names) == 0:
		w.emit(obj, "type %s interface {}", name)
	default:
		w.emit(obj, "type %s interface { %s }", name, strings.Join(names, ", "))
	}
}

func (w *walker) method(m *types.Selection) {
	sig := m.Type().(*types.Signature)
	tps := ""
	if rtp := sig.RecvTypeParams(); rtp != nil {
		tps = w.typeParams(rtp, false)
	}
	w.emit(nil, "method (%s%s) %s%s", w.typ(sig.Recv().Type()), tps, m.Obj().Name(), w.signature(sig))
	if w.deprecated[m.Obj().Pos()] {
		w.emit(nil, "method (%s%s) %s //deprecated", w.typ(sig.Recv().Type()), tps, m.Obj().Name())
	}
}

func (w *walker) inside(scope string, fn func()) {
	w.scope = append(w.scope, scope)
	fn()
	w.scope = w.scope[:len(w.scope)-1]
}

// typ writes a type as cmd/api does: another package's named types with its name, an
// untyped constant's type as ideal-int, ideal-string, …, byte and rune as uint8 and int32
// (a named struct's fields are lines of their own; an unnamed one is written in full).
func (w *walker) typ(t types.Type) string {
	var b strings.Builder
	w.writeType(&b, t)
	return b.String()
}

func (w *walker) writeType(b *strings.Builder, t types.Type) {
	switch t := t.(type) {
	case *types.Basic:
		b.WriteString(basicName(t))
	case *types.Array:
		fmt.Fprintf(b, "[%d]", t.Len())
		w.writeType(b, t.Elem())
	case *types.Slice:
		b.WriteString("[]")
		w.writeType(b, t.Elem())
	case *types.Struct:
		w.writeStruct(b, t)
	case *types.Pointer:
		b.WriteByte('*')
		w.writeType(b, t.Elem())
	case *types.Signature:
		b.WriteString("func")
		b.WriteString(w.signature(t))
	case *types.Interface:
		var parts []string
		for m := range t.Methods() {
			parts = append(parts, m.Name())
		}
		slices.Sort(parts)
		parts = append(parts, w.embeddeds(t)...)
		if len(parts) == 0 {
			b.WriteString("interface{}")
		} else {
			b.WriteString("interface{ " + strings.Join(parts, ", ") + " }")
		}
	case *types.Map:
		b.WriteString("map[")
		w.writeType(b, t.Key())
		b.WriteByte(']')
		w.writeType(b, t.Elem())
	case *types.Chan:
		b.WriteString(map[types.ChanDir]string{types.SendOnly: "chan<- ", types.RecvOnly: "<-chan ", types.SendRecv: "chan "}[t.Dir()])
		w.writeType(b, t.Elem())
	case *types.Alias:
		w.writeType(b, types.Unalias(t))
	case *types.Named:
		if p := t.Obj().Pkg(); p != nil && p != w.pkg {
			b.WriteString(p.Name() + ".")
		}
		b.WriteString(t.Obj().Name())
		if args := t.TypeArgs(); args.Len() > 0 {
			b.WriteByte('[')
			for i := range args.Len() {
				if i > 0 {
					b.WriteString(", ")
				}
				w.writeType(b, args.At(i))
			}
			b.WriteByte(']')
		}
	case *types.TypeParam:
		fmt.Fprintf(b, "$%d", t.Index())
	case *types.Union:
		for i := range t.Len() {
			if i > 0 {
				b.WriteString(" | ")
			}
			if t.Term(i).Tilde() {
				b.WriteByte('~')
			}
			w.writeType(b, t.Term(i).Type())
		}
	default:
		b.WriteString(t.String())
	}
}

// writeStruct writes an unnamed struct type in full, its unexported fields too (they are part
// of its identity): "struct{}", "struct{ A int; b string }". Go's cmd/api writes "struct",
// which would let `chan struct{}` become `chan struct{ X int }` unseen.
func (w *walker) writeStruct(b *strings.Builder, t *types.Struct) {
	if t.NumFields() == 0 {
		b.WriteString("struct{}")
		return
	}
	b.WriteString("struct{ ")
	for i := range t.NumFields() {
		if i > 0 {
			b.WriteString("; ")
		}
		if f := t.Field(i); !f.Embedded() {
			b.WriteString(f.Name() + " ")
		}
		w.writeType(b, t.Field(i).Type())
	}
	b.WriteString(" }")
}

// embeddeds are the type terms an interface (a constraint) embeds, its embedded interfaces'
// included: "~int | ~int64 | float64". An embedded interface's methods are among the
// interface's own.
func (w *walker) embeddeds(t *types.Interface) []string {
	var out []string
	for i := range t.NumEmbeddeds() {
		switch e := t.EmbeddedType(i); u := e.Underlying().(type) {
		case *types.Interface:
			out = append(out, w.embeddeds(u)...)
		default:
			out = append(out, w.typ(e))
		}
	}
	slices.Sort(out)
	return out
}

func basicName(t *types.Basic) string {
	switch t.Kind() {
	case types.UnsafePointer:
		return "unsafe.Pointer"
	case types.UntypedBool:
		return "ideal-bool"
	case types.UntypedInt:
		return "ideal-int"
	case types.UntypedRune:
		return "ideal-char"
	case types.UntypedFloat:
		return "ideal-float"
	case types.UntypedComplex:
		return "ideal-complex"
	case types.UntypedString:
		return "ideal-string"
	case types.Byte:
		return "uint8"
	case types.Rune:
		return "int32"
	}
	return t.Name()
}

// signature writes a signature without parameter names, which callers never write:
// "(context.Context, string, ...Option) (*Store, error)".
func (w *walker) signature(sig *types.Signature) string {
	var b strings.Builder
	if tps := sig.TypeParams(); tps != nil {
		b.WriteString(w.typeParams(tps, true))
	}
	b.WriteString(w.tuple(sig.Params(), sig.Variadic()))
	switch res := sig.Results(); res.Len() {
	case 0:
	case 1:
		b.WriteString(" " + w.typ(res.At(0).Type()))
	default:
		b.WriteString(" " + w.tuple(res, false))
	}
	return b.String()
}

func (w *walker) tuple(t *types.Tuple, variadic bool) string {
	parts := make([]string, t.Len())
	for i := range t.Len() {
		typ := t.At(i).Type()
		if variadic && i == t.Len()-1 {
			parts[i] = "..." + w.typ(typ.(*types.Slice).Elem())
			continue
		}
		parts[i] = w.typ(typ)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func (w *walker) typeParams(tps *types.TypeParamList, constraints bool) string {
	parts := make([]string, tps.Len())
	for i := range tps.Len() {
		parts[i] = w.typ(tps.At(i))
		if constraints {
			parts[i] += " " + w.typ(tps.At(i).Constraint())
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// deprecatedNames are the positions of the names whose doc comment has a paragraph
// "Deprecated: …" (go/doc's convention): declarations, fields and interface methods.
func deprecatedNames(files []*ast.File) map[token.Pos]bool {
	out := map[token.Pos]bool{}
	deprecated := func(doc *ast.CommentGroup) bool {
		if doc == nil {
			return false
		}
		for _, line := range strings.Split(doc.Text(), "\n") {
			if strings.HasPrefix(line, "Deprecated: ") {
				return true
			}
		}
		return false
	}
	mark := func(doc *ast.CommentGroup, names ...*ast.Ident) {
		if deprecated(doc) {
			for _, n := range names {
				out[n.Pos()] = true
			}
		}
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GenDecl:
				for _, spec := range n.Specs {
					switch s := spec.(type) {
					case *ast.ValueSpec:
						mark(n.Doc, s.Names...)
						mark(s.Doc, s.Names...)
					case *ast.TypeSpec:
						mark(n.Doc, s.Name)
						mark(s.Doc, s.Name)
					}
				}
			case *ast.FuncDecl:
				mark(n.Doc, n.Name)
				return false
			case *ast.Field:
				mark(n.Doc, n.Names...)
				if len(n.Names) == 0 { // embedded: T, *T, p.T
					t := n.Type
					if s, ok := t.(*ast.StarExpr); ok {
						t = s.X
					}
					if s, ok := t.(*ast.SelectorExpr); ok {
						t = s.Sel
					}
					if id, ok := t.(*ast.Ident); ok {
						mark(n.Doc, id)
					}
				}
			}
			return true
		})
	}
	return out
}
