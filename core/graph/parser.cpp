#include "core/graph/parser.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <queue>
#include <set>
#include <sstream>
#include <unordered_map>

#include "core/graph/functionalize.h"
#include "core/graph/lexer.h"
#include "core/graph/op_registry.h"
#include "core/graph/source_location.h"
#include "core/support/error.h"

namespace stax {
namespace {

using namespace graph_text;  // Loc, Token, Lexer (core/graph/lexer.h)

// ---- parsed records ----------------------------------------------------------------------------

struct RawValue {
  enum class Kind { Literal, Ref, List } kind = Kind::Literal;
  Arg literal;
  std::string ref;
  Loc loc;
  std::vector<RawValue> items;
};

struct NodeRec {
  std::string name;
  Loc loc;
  Phase phase = Phase::None;
  bool is_placeholder = false;
  std::optional<Shape> shape;
  std::optional<DType> dtype;
  std::optional<std::string> device;
  std::optional<int64_t> num_users;
  Loc shape_loc, dtype_loc, device_loc, num_users_loc;
  std::string target;
  Loc args_loc;
  std::vector<RawValue> args;
  std::vector<std::pair<std::string, RawValue>> kwargs;
};

struct ReturnRec {
  bool present = false;
  Phase phase = Phase::None;
  Loc loc;
  std::vector<std::pair<std::string, Loc>> values;
  // Per value: the placeholder it updates ("NAME -> INPUT"), or "".
  std::vector<std::pair<std::string, Loc>> updates;
};

// Nesting limit of list / tuple arguments: the parser recurses once per level.
constexpr int kMaxListDepth = 64;

// ---- the parser --------------------------------------------------------------------------------

class Parser {
 public:
  Parser(std::string_view text, const std::string& file, const ParseOptions& options)
      : text_(text),
        file_(file),
        options_(options),
        registry_(options.registry ? *options.registry : default_registry()),
        lex_(text, [this](Loc l) { return where(l); }) {}

  Graph run() {
    reject_nul_bytes();
    parse_text();
    return build();
  }

 private:
  std::string where(Loc l) const {
    return file_ + ":" + std::to_string(l.line) + ":" + std::to_string(l.col);
  }
  [[noreturn]] void fail(Loc l, const std::string& msg) const {
    throw Error("parse", where(l), msg);
  }

  // A NUL byte is never valid; rejected up front so that no message quotes one (a C string
  // would end there).
  void reject_nul_bytes() const {
    size_t nul = text_.find('\0');
    if (nul == std::string_view::npos) return;
    Loc l{1, 1};
    for (size_t i = 0; i < nul; ++i) {
      if (text_[i] == '\n') {
        ++l.line;
        l.col = 1;
      } else {
        ++l.col;
      }
    }
    fail(l, "NUL byte in the graph text");
  }

  Token expect_punct(char c, const std::string& context) {
    Token t = lex_.next();
    if (!t.is_punct(c))
      fail(t.loc, std::string("expected '") + c + "' " + context + ", found " + describe(t));
    return t;
  }
  Token expect_word(std::string_view w, const std::string& context) {
    Token t = lex_.next();
    if (!t.is_word(w))
      fail(t.loc, "expected '" + std::string(w) + "' " + context + ", found " + describe(t));
    return t;
  }
  void skip_newlines() {
    while (lex_.peek().kind == Tok::Newline) lex_.next();
  }

  // file := [ "graph(" NL ] { stmt NL } [ ")" ]
  void parse_text() {
    skip_newlines();
    bool wrapped = false;
    Loc open;
    if (lex_.peek().is_word("graph")) {
      open = lex_.next().loc;
      wrapped = true;
      expect_punct('(', "after 'graph'");
      if (lex_.peek().is_punct(')')) {  // FX's "graph():" header: no closing ')' follows
        lex_.next();
        expect_punct(':', "after 'graph()'");
        wrapped = false;
        fx_printout_ = true;
      }
      Token t = lex_.next();
      if (t.kind != Tok::Newline && t.kind != Tok::End)
        fail(t.loc, "expected end of line after 'graph(', found " + describe(t));
    }
    for (;;) {
      skip_newlines();
      const Token& t = lex_.peek();
      if (t.kind == Tok::End) {
        if (wrapped)
          fail(t.loc,
               "expected ')' to close 'graph(' (opened at " + where(open) + "), found end of file");
        break;
      }
      if (wrapped && t.is_punct(')')) {
        lex_.next();
        skip_newlines();
        const Token& e = lex_.peek();
        if (e.kind != Tok::End)
          fail(e.loc, "expected end of file after the ')' closing 'graph(', found " + describe(e));
        break;
      }
      if (ret_.present)
        fail(t.loc, std::string("expected ") + (wrapped ? "')' closing 'graph('" : "end of file") +
                        " after the 'return' line, found " + describe(t));
      parse_statement();
    }
    if (!ret_.present)
      fail(lex_.peek().loc, "expected a 'return (...)' line: the graph names no outputs");
  }

  // stmt := [ "[FW]" | "[BW]" ] ( node | return )
  void parse_statement() {
    Phase phase = Phase::None;
    if (lex_.peek().is_punct('[')) {
      lex_.next();
      Token p = lex_.next();
      if (p.is_word("FW"))
        phase = Phase::Forward;
      else if (p.is_word("BW"))
        phase = Phase::Backward;
      else
        fail(p.loc, "expected 'FW' or 'BW' after '[', found " + describe(p));
      expect_punct(']', "after '[" + p.text);
    }
    const Token& t = lex_.peek();
    std::string what;
    if (t.is_word("return")) {
      parse_return(phase);
      what = "'return'";
    } else if (t.kind == Tok::Ref) {
      what = "the definition of %" + t.str;
      parse_node(phase);
    } else {
      fail(t.loc,
           "expected a node ('%name ... = placeholder[...]' or '... = call_function[...]') "
           "or 'return', found " +
               describe(t));
    }
    const Token& e = lex_.peek();
    if (e.kind != Tok::Newline && e.kind != Tok::End)
      fail(e.loc, "expected end of line after " + what + ", found " + describe(e));
  }

  void parse_node(Phase phase) {
    Token r = lex_.next();
    NodeRec rec;
    rec.name = r.str;
    rec.loc = r.loc;
    rec.phase = phase;
    if (rec.name == "output")
      fail(r.loc, "the name '%output' is reserved for the graph's return node");
    if (auto it = index_.find(rec.name); it != index_.end())
      fail(r.loc, "redefinition of '%" + rec.name + "' (first defined at " +
                      where(records_[it->second].loc) + ")");
    parse_annotations(rec);
    if (lex_.peek().is_punct(':')) parse_num_users(rec);
    Token eq = lex_.next();
    if (!eq.is_punct('='))
      fail(eq.loc, "expected 'shape=', 'dtype=', 'device=', ': [num_users=N]' or '=' after %" +
                       rec.name + ", found " + describe(eq));
    Token kind = lex_.next();
    // FX's get_attr (a module's parameter or a lifted constant) is an input like a placeholder.
    if (kind.is_word("placeholder") || kind.is_word("get_attr")) {
      parse_placeholder(rec, kind);
    } else if (kind.is_word("call_function")) {
      parse_call(rec);
    } else {
      fail(kind.loc, "expected 'placeholder', 'get_attr' or 'call_function' after '=', found " +
                         describe(kind));
    }
    index_[rec.name] = records_.size();
    records_.push_back(std::move(rec));
  }

  // shape= dtype= device= annotations of a node, in any order, each at most once.
  void parse_annotations(NodeRec& rec) {
    for (;;) {
      const Token& a = lex_.peek();
      if (!(a.is_word("shape") || a.is_word("dtype") || a.is_word("device"))) break;
      Token attr = lex_.next();
      bool dup = (attr.text == "shape" && rec.shape) || (attr.text == "dtype" && rec.dtype) ||
                 (attr.text == "device" && rec.device);
      if (dup) fail(attr.loc, "'" + attr.text + "=' given twice for %" + rec.name);
      expect_punct('=', "after '" + attr.text + "'");
      if (attr.text == "shape") {
        rec.shape = parse_shape();
        rec.shape_loc = attr.loc;
      } else {
        Token v = lex_.next();
        if (attr.text == "device" && v.kind == Tok::String) {  // device='cuda:0'
          rec.device = v.str;
          rec.device_loc = attr.loc;
          continue;
        }
        if (v.kind != Tok::Ident)
          fail(v.loc, "expected a " + attr.text + " name after '" + attr.text + "=', found " +
                          describe(v));
        if (attr.text == "dtype") {
          auto dt = parse_dtype(v.text);
          if (!dt) fail(v.loc, "unknown dtype '" + v.text + "'");
          rec.dtype = *dt;
          rec.dtype_loc = attr.loc;
        } else {
          rec.device = v.text;
          rec.device_loc = attr.loc;
        }
      }
    }
  }

  // ': [num_users=N]' (FX 2.x) or ': [#users=N]' (FX 1.x).
  void parse_num_users(NodeRec& rec) {
    lex_.next();
    expect_punct('[', "after ':'");
    Token nu = lex_.next();  // num_users (FX 2.x) or #users (FX 1.x)
    if (!nu.is_word("num_users") && !nu.is_word("#users"))
      fail(nu.loc, "expected 'num_users' after ': [', found " + describe(nu));
    rec.num_users_loc = nu.loc;
    expect_punct('=', "after '" + nu.text + "'");
    Token n = lex_.next();
    if (n.kind != Tok::Int || n.ival < 0)
      fail(n.loc, "expected a non-negative integer after 'num_users=', found " + describe(n));
    rec.num_users = n.ival;
    expect_punct(']', "after the num_users count");
  }

  // '[target=NAME]' after 'placeholder' or 'get_attr' (`kind`).
  void parse_placeholder(NodeRec& rec, const Token& kind) {
    rec.is_placeholder = true;
    expect_punct('[', "after '" + kind.text + "'");
    expect_word("target", "after '" + kind.text + "['");
    expect_punct('=', "after 'target'");
    Token nm = lex_.next();
    if (nm.kind != Tok::Ident)
      fail(nm.loc, "expected the placeholder's name after 'target=', found " + describe(nm));
    // FX names a node after its target made a lower-case identifier (an argument W prints as
    // %w_1 = placeholder[target=W_1], a buffer as %l_bn_running_mean = get_attr[target=
    // l.bn.running_mean]): in its printouts the node's name is what the graph uses.
    if (nm.text != rec.name && !fx_printout_)
      fail(nm.loc, "placeholder target '" + nm.text + "' differs from the node's name '%" +
                       rec.name + "' (they must be the same)");
    expect_punct(']', "after the placeholder's target");
  }

  // '[target=OP](args = (...)[, kwargs = {...}])' after 'call_function'.
  void parse_call(NodeRec& rec) {
    expect_punct('[', "after 'call_function'");
    expect_word("target", "after 'call_function['");
    expect_punct('=', "after 'target'");
    Token tg = lex_.next();
    if (tg.kind != Tok::Ident)
      fail(tg.loc,
           "expected an op overload (e.g. add.Tensor) after 'target=', found " + describe(tg));
    if (!registry_.find(tg.text)) check_unknown_target(tg);
    rec.target = tg.text;
    expect_punct(']', "after the call's target");
    expect_punct('(', "after 'call_function[...]'");
    expect_word("args", "after '('");
    expect_punct('=', "after 'args'");
    rec.args_loc = expect_punct('(', "after 'args ='").loc;
    rec.args = parse_sequence(')', "in args");
    if (lex_.peek().is_punct(',')) {
      lex_.next();
      expect_word("kwargs", "after ','");
      expect_punct('=', "after 'kwargs'");
      expect_punct('{', "after 'kwargs ='");
      parse_kwargs(rec);
      expect_punct(')', "after kwargs");
    } else {
      expect_punct(')', "after args");
    }
  }

  // Reports an unknown call target: a misspelled namespace (tensorplay.ops.tp. / tp.) is named as
  // such; otherwise the registry suggests the closest op names.
  [[noreturn]] void check_unknown_target(const Token& tg) const {
    std::string canon = canonical_target(tg.text);
    std::string op = canon;
    size_t last = canon.rfind('.');
    if (last != std::string::npos && last > 0) {
      size_t prev = canon.rfind('.', last - 1);
      if (prev != std::string::npos) op = canon.substr(prev + 1);  // a prefix it did not know
    }
    if (op != canon && registry_.find(op))
      fail(tg.loc, "unknown op namespace in '" + tg.text + "': write tensorplay.ops.tp." + op +
                       ", tp." + op + " or " + op);
    std::string msg = "unknown op '" + tg.text + "'";
    auto names = registry_.suggest(op);
    for (size_t i = 0; i < names.size(); ++i)
      msg += (i ? ", " : "; did you mean: ") + names[i] + (i + 1 == names.size() ? "?" : "");
    fail(tg.loc, msg);
  }

  Shape parse_shape() {
    expect_punct('(', "after 'shape='");
    Shape s;
    if (lex_.peek().is_punct(')')) {
      lex_.next();
      return s;
    }
    for (;;) {
      Token d = lex_.next();
      if (d.kind != Tok::Int || d.ival < 0)
        fail(d.loc, "expected a non-negative integer size in shape, found " + describe(d));
      s.push_back(d.ival);
      Token t = lex_.next();
      if (t.is_punct(')')) return s;
      if (!t.is_punct(',')) fail(t.loc, "expected ',' or ')' in shape, found " + describe(t));
      if (lex_.peek().is_punct(')')) {
        lex_.next();
        return s;
      }
    }
  }

  // The items of a list / tuple whose opening bracket was consumed, up to `close`.
  std::vector<RawValue> parse_sequence(char close, const std::string& context) {
    std::vector<RawValue> items;
    if (lex_.peek().is_punct(close)) {
      lex_.next();
      return items;
    }
    for (;;) {
      items.push_back(parse_value(context, fx_printout_));
      Token t = lex_.next();
      if (t.is_punct(close)) return items;
      if (!t.is_punct(','))
        fail(t.loc,
             std::string("expected ',' or '") + close + "' " + context + ", found " + describe(t));
      if (lex_.peek().is_punct(close)) {
        lex_.next();
        return items;
      }
    }
  }

  void parse_kwargs(NodeRec& rec) {
    if (lex_.peek().is_punct('}')) {
      lex_.next();
      return;
    }
    for (;;) {
      Token k = lex_.next();
      if (k.kind != Tok::Ident && k.kind != Tok::String)
        fail(k.loc, "expected a keyword name in kwargs, found " + describe(k));
      std::string key = k.kind == Tok::Ident ? k.text : k.str;
      for (const auto& kv : rec.kwargs)
        if (kv.first == key) fail(k.loc, "keyword '" + key + "' given twice in kwargs");
      expect_punct(':', "after the keyword '" + key + "'");
      rec.kwargs.emplace_back(key, parse_value("for keyword '" + key + "'", true));
      Token t = lex_.next();
      if (t.is_punct('}')) return;
      if (!t.is_punct(',')) fail(t.loc, "expected ',' or '}' in kwargs, found " + describe(t));
      if (lex_.peek().is_punct('}')) {
        lex_.next();
        return;
      }
    }
  }

  // An unquoted identifier FX may print as a string value: any, except one that reads as a
  // misspelt dtype (`torch.flaot32`, `tensorplay.x`: two parts, the first torch or tensorplay).
  // Dotted ones are API names: _linalg_check_errors(%info, linalg.inv) or torch.linalg.solve.
  static bool bare_string(const std::string& text) {
    size_t dot = text.find('.');
    if (dot == std::string::npos) return true;
    std::string head = text.substr(0, dot);
    bool two_parts = text.find('.', dot + 1) == std::string::npos;
    return !(two_parts && (head == "torch" || head == "tensorplay"));
  }

  // `bare_strings`: an identifier that is no other literal is a string (FX prints string values
  // unquoted: kwargs = {approximate: tanh}, and in a `graph():` printout's args too:
  // scatter_reduce.two(%x, 0, %idx, %src, amax)).
  RawValue parse_value(const std::string& context, bool bare_strings = false) {
    Token t = lex_.next();
    RawValue v;
    v.loc = t.loc;
    switch (t.kind) {
      case Tok::Ref:
        v.kind = RawValue::Kind::Ref;
        v.ref = t.str;
        return v;
      case Tok::Int: v.literal = Arg(t.ival); return v;
      case Tok::Float: v.literal = Arg(t.dval); return v;
      case Tok::String: v.literal = Arg(t.str); return v;
      case Tok::Ident:
        if (t.text == "True" || t.text == "False") {
          v.literal = Arg(t.text == "True");
        } else if (t.text == "None") {
          v.literal = Arg();
        } else if (t.text == "inf") {
          v.literal = Arg(std::numeric_limits<double>::infinity());
        } else if (t.text == "nan") {
          v.literal = Arg(std::numeric_limits<double>::quiet_NaN());
        } else if (t.text == "tensorplay.undefined") {
          v.literal = Arg(Undefined{});
        } else if (t.text == "device" && lex_.peek().is_punct('(')) {
          v.literal = Arg(parse_device_literal());
        } else if (t.text == "cpu" || t.text == "cuda" || t.text == "meta") {
          v.literal = Arg(t.text);  // FX 1.x prints a device kwarg bare: device: cpu
        } else if (auto e = t.text.find('.') != std::string::npos ? parse_enum_literal(t.text)
                                                                  : std::nullopt) {
          v.literal = Arg(*e);
        } else if (auto dt =
                       t.text.find('.') != std::string::npos ? parse_dtype(t.text) : std::nullopt) {
          v.literal = Arg(*dt);
        } else if (bare_strings && bare_string(t.text)) {
          v.literal = Arg(t.text);
        } else {
          fail(t.loc, "expected a value " + context +
                          " (%name, a number, True, False, None, "
                          "a string, a list or tensorplay.<dtype>), found " +
                          describe(t));
        }
        return v;
      case Tok::Punct:
        if (t.is_punct('[') || t.is_punct('(')) {
          if (list_depth_ >= kMaxListDepth)
            fail(t.loc, "lists and tuples nest deeper than " + std::to_string(kMaxListDepth) +
                            " levels");
          v.kind = RawValue::Kind::List;
          bool tuple = t.is_punct('(');
          ++list_depth_;
          v.items = parse_sequence(tuple ? ')' : ']', tuple ? "in the tuple" : "in the list");
          --list_depth_;
          return v;
        }
        break;
      default: break;
    }
    fail(t.loc, "expected a value " + context + ", found " + describe(t));
  }

  // FX prints devices as device(type='cpu') or device(type='cuda', index=0): the device string
  // ("cpu", "cuda:0"). The word 'device' was consumed.
  std::string parse_device_literal() {
    expect_punct('(', "after 'device'");
    expect_word("type", "after 'device('");
    expect_punct('=', "after 'type'");
    Token ty = lex_.next();
    if (ty.kind != Tok::String)
      fail(ty.loc, "expected the device type as a string after 'type=', found " + describe(ty));
    std::string dev = ty.str;
    if (lex_.peek().is_punct(',')) {
      lex_.next();
      expect_word("index", "after ',' in device(...)");
      expect_punct('=', "after 'index'");
      Token ix = lex_.next();
      if (ix.kind != Tok::Int || ix.ival < 0)
        fail(ix.loc, "expected a non-negative device index, found " + describe(ix));
      dev += ":" + std::to_string(ix.ival);
    }
    expect_punct(')', "closing device(...)");
    return dev;
  }

  // return := "return" ( "(" [ item { "," item } [","] ] ")" | ref )
  //   item   := ref | "(" ... ")" | "[" ... "]"    (FX nests tuples and lists: flattened in order)
  void parse_return(Phase phase) {
    Token r = lex_.next();
    ret_.present = true;
    ret_.phase = phase;
    ret_.loc = r.loc;
    auto name = [&] {
      Token t = lex_.next();
      if (t.kind == Tok::Ref) return std::make_pair(t.str, t.loc);
      if (t.kind == Tok::Ident && t.text.find('.') == std::string::npos)
        return std::make_pair(t.text, t.loc);
      fail(t.loc, "expected an output name after 'return', found " + describe(t));
    };
    if (!lex_.peek().is_punct('(') && !lex_.peek().is_punct('[')) {
      ret_.values.push_back(name());
      ret_.updates.emplace_back();
      return;
    }
    parse_return_group(0, name);
  }

  // After a returned value: [ "->" NAME ], the placeholder it is the new value of.
  void parse_update(bool allowed) {
    if (!lex_.peek().is_arrow()) {
      ret_.updates.emplace_back();
      return;
    }
    Token arrow = lex_.next();
    if (!allowed)
      fail(arrow.loc, "an input update ('value -> input') must be an item of the return tuple, "
                      "not nested");
    Token t = lex_.next();
    std::string input;
    if (t.kind == Tok::Ref)
      input = t.str;
    else if (t.kind == Tok::Ident && t.text.find('.') == std::string::npos)
      input = t.text;
    else
      fail(t.loc, "expected the name of the input it updates after '->', found " + describe(t));
    ret_.updates.emplace_back(input, t.loc);
  }

  template <class NameFn>
  void parse_return_group(int depth, NameFn& name) {
    Token open = lex_.next();  // '(' or '['
    if (depth >= kMaxListDepth)
      fail(open.loc, "return values nest deeper than " + std::to_string(kMaxListDepth) + " levels");
    char close = open.is_punct('(') ? ')' : ']';
    if (lex_.peek().is_punct(close)) {
      lex_.next();
      return;
    }
    for (;;) {
      if (lex_.peek().is_punct('(') || lex_.peek().is_punct('[')) {
        parse_return_group(depth + 1, name);
      } else {
        ret_.values.push_back(name());
        parse_update(depth == 0);
      }
      Token t = lex_.next();
      if (t.is_punct(close)) return;
      if (!t.is_punct(','))
        fail(t.loc, std::string("expected ',' or '") + close + "' in return, found " + describe(t));
      if (lex_.peek().is_punct(close)) {
        lex_.next();
        return;
      }
    }
  }

  // ---- building ----

  size_t lookup(const std::string& name, Loc loc) const {
    auto it = index_.find(name);
    if (it != index_.end()) return it->second;
    std::string best;
    size_t best_d = 3;
    for (const auto& r : records_) {
      size_t d = edit_distance(name, r.name);
      if (d < best_d) {
        best_d = d;
        best = r.name;
      }
    }
    fail(loc, "undefined value '%" + name + "'" +
                  (best.empty() ? "" : " (did you mean '%" + best + "'?)"));
  }

  void collect_refs(const RawValue& v, std::vector<std::pair<size_t, Loc>>& out) const {
    if (v.kind == RawValue::Kind::Ref) out.emplace_back(lookup(v.ref, v.loc), v.loc);
    for (const auto& e : v.items) collect_refs(e, out);
  }

  Arg resolve(const RawValue& v) const {
    switch (v.kind) {
      case RawValue::Kind::Literal: return v.literal;
      case RawValue::Kind::Ref: return Arg(nodes_.at(index_.at(v.ref)));
      case RawValue::Kind::List: {
        Arg::List l;
        for (const auto& e : v.items) l.push_back(resolve(e));
        return Arg(std::move(l));
      }
    }
    return {};
  }

  // A stable topological order of the records (text order wherever it is valid).
  std::vector<size_t> order_records() const {
    size_t n = records_.size();
    std::vector<std::vector<std::pair<size_t, Loc>>> deps(n);
    std::vector<std::vector<size_t>> users(n);
    std::vector<size_t> pending(n, 0);
    for (size_t i = 0; i < n; ++i) {
      std::vector<std::pair<size_t, Loc>> refs;
      for (const auto& a : records_[i].args) collect_refs(a, refs);
      for (const auto& kv : records_[i].kwargs) collect_refs(kv.second, refs);
      std::set<size_t> seen;
      for (const auto& [j, loc] : refs) {
        if (!seen.insert(j).second) continue;
        deps[i].emplace_back(j, loc);
        users[j].push_back(i);
        ++pending[i];
      }
    }
    std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
    for (size_t i = 0; i < n; ++i)
      if (pending[i] == 0) ready.push(i);
    std::vector<size_t> order;
    while (!ready.empty()) {
      size_t i = ready.top();
      ready.pop();
      order.push_back(i);
      for (size_t u : users[i])
        if (--pending[u] == 0) ready.push(u);
    }
    if (order.size() == n) return order;
    // A cycle: walk from the first unsorted record through unsorted inputs until one repeats.
    std::vector<bool> done(n, false);
    for (size_t i : order) done[i] = true;
    size_t cur = std::find(done.begin(), done.end(), false) - done.begin();
    std::vector<size_t> path;
    std::vector<Loc> via;
    std::unordered_map<size_t, size_t> pos;
    while (!pos.count(cur)) {
      pos[cur] = path.size();
      path.push_back(cur);
      for (const auto& [j, loc] : deps[cur])
        if (!done[j]) {
          via.push_back(loc);
          cur = j;
          break;
        }
    }
    std::vector<size_t> cycle(path.begin() + pos[cur], path.end());
    std::vector<Loc> cycle_via(via.begin() + pos[cur], via.end());
    size_t first = std::min_element(cycle.begin(), cycle.end()) - cycle.begin();
    std::string text;
    for (size_t k = 0; k <= cycle.size(); ++k)
      text += (k ? " -> %" : "%") + records_[cycle[(first + k) % cycle.size()]].name;
    fail(cycle_via[first], "the graph has a cycle: " + text + " (each node uses the next)");
  }

  TensorMeta placeholder_meta(const NodeRec& rec, std::set<std::string>& used) const {
    auto it = options_.placeholder_meta.find(rec.name);
    if (it != options_.placeholder_meta.end()) {
      used.insert(rec.name);
      TensorMeta m = it->second;
      if (m.strides.empty() && !m.sizes.empty()) m.strides = contiguous_strides(m.sizes);
      if (rec.shape && (*rec.shape != m.sizes || rec.dtype.value_or(DType::Float32) != m.dtype))
        fail(rec.shape_loc,
             "placeholder %" + rec.name + ": the text says shape=" + shape_str(*rec.shape) +
                 " dtype=" + std::string(dtype_name(rec.dtype.value_or(DType::Float32))) +
                 ", but shape=" + shape_str(m.sizes) +
                 " dtype=" + std::string(dtype_name(m.dtype)) + " was given");
      return m;
    }
    if (!rec.shape) {
      auto f = options_.placeholder_meta_if_missing.find(rec.name);
      if (f != options_.placeholder_meta_if_missing.end()) {
        TensorMeta m = f->second;
        if (m.strides.empty() && !m.sizes.empty()) m.strides = contiguous_strides(m.sizes);
        return m;
      }
    }
    if (!rec.shape)
      fail(rec.loc, "placeholder %" + rec.name +
                        " needs its metadata: write shape=(...) (and dtype=... unless float32)");
    return TensorMeta::contiguous(*rec.shape, rec.dtype.value_or(DType::Float32),
                                  rec.device.value_or("cpu"));
  }

  void check_call_meta(const NodeRec& rec, const Node& n) const {
    const std::string node = "%" + rec.name;
    if (n.is_tuple() && (rec.shape || rec.dtype))
      fail(rec.shape ? rec.shape_loc : rec.dtype_loc,
           node + " is a tuple of " + std::to_string(n.tuple_metas().size()) + " tensors (" +
               n.target() + "): write shape=/dtype= on its getitem nodes");
    if (rec.shape && *rec.shape != n.shape())
      fail(rec.shape_loc, node + ": shape=" + shape_str(*rec.shape) +
                              " given, but the inferred shape is " + shape_str(n.shape()));
    if (rec.dtype && *rec.dtype != n.dtype())
      fail(rec.dtype_loc, node + ": dtype=" + std::string(dtype_name(*rec.dtype)) +
                              " given, but the inferred dtype is " +
                              std::string(dtype_name(n.dtype())));
    if (rec.device && *rec.device != n.meta().device)
      fail(rec.device_loc, node + ": device=" + *rec.device +
                               " given, but the inferred device is " + n.meta().device);
  }

  // A text with in-place ops (functionalized as the graph is built, core/graph/functionalize.h)
  // must define every value before its use: then the build order is the text order.
  void check_order_for_mutations(const std::vector<size_t>& order) const {
    const NodeRec* first_mutation = nullptr;
    for (const auto& rec : records_) {
      const OpDef* op = rec.is_placeholder ? nullptr : registry_.find(rec.target);
      if (op && default_functionalization_table().mutation(op->name())) {
        first_mutation = &rec;
        break;
      }
    }
    if (!first_mutation) return;
    for (size_t k = 0; k < order.size(); ++k) {
      if (order[k] == k) continue;
      const NodeRec& early = records_[std::min(order[k], k)];
      fail(early.loc, "%" + early.name + " uses a value defined further down; a graph with "
                      "in-place ops (%" + first_mutation->name + ", " + first_mutation->target +
                      ") must define every value before its use");
    }
  }

  // After an in-place view op (transpose_(x, 0, 1) ...), x names the view: later reads of x
  // (text order, check_order_for_mutations) get the node the call made.
  void rebind_inplace_view(const NodeRec& rec, Node* made) {
    const OpDef* op = registry_.find(rec.target);
    if (!op || !default_functionalization_table().is_inplace_view(op->name())) return;
    if (!rec.args.empty() && rec.args[0].kind == RawValue::Kind::Ref)
      nodes_[lookup(rec.args[0].ref, rec.args[0].loc)] = made;
  }

  // Users as FX counts them: the distinct nodes naming a value, the return counted once.
  std::vector<size_t> text_users() const {
    std::vector<std::set<size_t>> users(records_.size());
    for (size_t i = 0; i < records_.size(); ++i) {
      std::vector<std::pair<size_t, Loc>> refs;
      for (const auto& a : records_[i].args) collect_refs(a, refs);
      for (const auto& kv : records_[i].kwargs) collect_refs(kv.second, refs);
      for (const auto& r : refs) users[r.first].insert(i);
    }
    for (const auto& [name, loc] : ret_.values) users[lookup(name, loc)].insert(records_.size());
    std::vector<size_t> n;
    for (const auto& u : users) n.push_back(u.size());
    return n;
  }

  Graph build() {
    Graph g(registry_);
    std::vector<size_t> order = order_records();
    check_order_for_mutations(order);
    std::vector<std::string> names;
    for (const auto& rec : records_) names.push_back(rec.name);
    g.reserve_names(std::move(names));
    nodes_.assign(records_.size(), nullptr);
    std::set<std::string> used;
    for (size_t i : order) {
      const NodeRec& rec = records_[i];
      Node* n = nullptr;
      if (rec.is_placeholder) {
        try {
          n = g.placeholder(rec.name, placeholder_meta(rec, used));
        } catch (const Error& e) {
          if (e.stage() != "shape") throw;
          fail(rec.shape_loc, "%" + rec.name + ": " + e.message());
        }
      } else {
        std::vector<Arg> args;
        for (const auto& a : rec.args) args.push_back(resolve(a));
        Kwargs kwargs;
        for (const auto& [k, v] : rec.kwargs) kwargs.emplace_back(k, resolve(v));
        try {
          n = g.call(rec.target, std::move(args), std::move(kwargs), rec.name);
        } catch (const Error& e) {
          fail(rec.args_loc, "%" + rec.name + ": " + e.message());
        }
        check_call_meta(rec, *n);
        rebind_inplace_view(rec, n);
      }
      n->set_phase(rec.phase);
      set_source_location(*n, where(rec.loc));
      nodes_[i] = n;
    }
    for (const auto& [name, meta] : options_.placeholder_meta)
      if (!used.count(name))
        throw Error(
            "parse", file_,
            "metadata was given for '" + name + "', which is not a placeholder of the graph");
    std::vector<Node*> outs;
    std::vector<std::string> updates;
    for (size_t k = 0; k < ret_.values.size(); ++k) {
      const auto& [name, loc] = ret_.values[k];
      outs.push_back(nodes_[lookup(name, loc)]);
      const auto& [input, input_loc] = ret_.updates[k];
      if (!input.empty()) {
        const NodeRec& p = records_[lookup(input, input_loc)];
        if (!p.is_placeholder)
          fail(input_loc, "'" + name + " -> " + input + "': %" + input +
                              " is no placeholder (only an input can be updated)");
      }
      updates.push_back(input);
    }
    try {
      g.output(std::move(outs), std::move(updates))->set_phase(ret_.phase);
    } catch (const Error& e) {
      fail(ret_.loc, e.message());
    }
    check_num_users();
    return g;
  }

  void check_num_users() const {
    std::vector<size_t> counted = text_users();
    for (size_t i = 0; i < records_.size(); ++i) {
      const NodeRec& rec = records_[i];
      if (!rec.num_users || static_cast<size_t>(*rec.num_users) == counted[i]) continue;
      // A size query (sym_size.int ...) folds into the numbers it feeds: FX counted those uses.
      const Node& n = *nodes_[i];
      if (n.is_call() && n.op()->static_value) continue;
      std::string users;
      for (size_t j = 0; j < records_.size(); ++j) {
        std::vector<std::pair<size_t, Loc>> refs;
        for (const auto& a : records_[j].args) collect_refs(a, refs);
        for (const auto& kv : records_[j].kwargs) collect_refs(kv.second, refs);
        for (const auto& r : refs)
          if (r.first == i) {
            users += (users.empty() ? "%" : ", %") + records_[j].name;
            break;
          }
      }
      for (const auto& [name, loc] : ret_.values)
        if (lookup(name, loc) == i) {
          users += users.empty() ? "return" : ", return";
          break;
        }
      fail(rec.num_users_loc, "%" + rec.name + ": num_users=" + std::to_string(*rec.num_users) +
                                  " given, but it has " + std::to_string(counted[i]) +
                                  (counted[i] == 1 ? " user" : " users") +
                                  (users.empty() ? "" : " (" + users + ")"));
    }
  }

  std::string_view text_;
  std::string file_;
  const ParseOptions& options_;
  const OpRegistry& registry_;
  Lexer lex_;
  int list_depth_ = 0;  // nesting of lists and tuples at the current token
  bool fx_printout_ = false;  // the text has FX's `graph():` header (strings print unquoted)
  std::vector<NodeRec> records_;
  std::unordered_map<std::string, size_t> index_;
  ReturnRec ret_;
  std::vector<Node*> nodes_;
};

}  // namespace

Graph parse_graph(std::string_view text, const std::string& file_name,
                  const ParseOptions& options) {
  return Parser(text, file_name, options).run();
}

Graph parse_graph_file(const std::string& path, const ParseOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("parse", path, std::string("cannot open the file: ") + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_graph(ss.str(), path, options);
}

}  // namespace stax
