// The lexer of the graph text (.stax listings and torch.fx printouts): tokens produced on demand,
// so that errors come in source order. Internal to core/graph/parser.cpp, kept apart so that the
// parser file holds the grammar only.
#pragma once

#include <cctype>
#include <charconv>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <string_view>

#include "core/support/error.h"

namespace stax::graph_text {

// ---- tokens ------------------------------------------------------------------------------------

struct Loc {
  int line = 1, col = 1;
};

enum class Tok { Ident, Ref, Int, Float, String, Punct, Newline, End };

struct Token {
  Tok kind = Tok::End;
  std::string text;  // the lexeme as written ("" at the end of the file)
  std::string str;   // Ref: the name without '%'; String: the decoded value
  int64_t ival = 0;
  double dval = 0;
  Loc loc;

  bool is_punct(char c) const { return kind == Tok::Punct && text[0] == c && text.size() == 1; }
  bool is_arrow() const { return kind == Tok::Punct && text == "->"; }
  bool is_word(std::string_view w) const { return kind == Tok::Ident && text == w; }
};

inline std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::End: return "end of file";
    case Tok::Newline: return "end of line";
    case Tok::String: return "string " + t.text;
    default: return "'" + t.text + "'";
  }
}

inline bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
inline bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
inline bool digit(char c) { return c >= '0' && c <= '9'; }

// Produces tokens on demand, so that errors are reported in source order.
class Lexer {
 public:
  Lexer(std::string_view src, std::function<std::string(Loc)> where)
      : src_(src), where_(std::move(where)) {}

  const Token& peek() {
    if (!has_) {
      tok_ = lex();
      has_ = true;
    }
    return tok_;
  }
  Token next() {
    peek();
    has_ = false;
    return std::move(tok_);
  }

 private:
  char at(size_t k = 0) const { return pos_ + k < src_.size() ? src_[pos_ + k] : '\0'; }
  bool at_end() const { return pos_ >= src_.size(); }
  void advance() {
    if (src_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }
  [[noreturn]] void fail(Loc l, const std::string& msg) const {
    throw Error("parse", where_(l), msg);
  }

  Token lex() {
    for (;;) {
      while (!at_end() && (at() == ' ' || at() == '\t' || at() == '\r')) advance();
      if (at() != '#' || src_.substr(pos_, 7) == "#users=") break;  // FX 1.x: [#users=1]
      while (!at_end() && at() != '\n') advance();
    }
    Token t;
    t.loc = {line_, col_};
    if (at_end()) return t;
    size_t begin = pos_;
    char c = at();
    if (c == '\n') {
      advance();
      t.kind = Tok::Newline;
      t.text = "\n";
    } else if (c == '#') {  // "#users" (the comment case was skipped above)
      for (int i = 0; i < 6; ++i) advance();
      t.kind = Tok::Ident;
    } else if (ident_start(c)) {
      t.kind = Tok::Ident;
      while (ident_char(at())) advance();
      while (at() == '.' && ident_char(at(1))) {
        advance();
        while (ident_char(at())) advance();
      }
    } else if (c == '%') {
      advance();
      if (!ident_start(at())) fail(t.loc, "expected a value name after '%'");
      while (ident_char(at())) advance();
      t.kind = Tok::Ref;
      t.str = std::string(src_.substr(begin + 1, pos_ - begin - 1));
    } else if (digit(c) || (c == '.' && digit(at(1))) ||
               ((c == '-' || c == '+') && (digit(at(1)) || (at(1) == '.' && digit(at(2))) ||
                                           src_.substr(pos_ + 1, 3) == "inf"))) {
      lex_number(t);
    } else if (c == '\'' || c == '"') {
      lex_string(t);
    } else if (c == '-' && at(1) == '>') {  // return (y, add -> x): an input's update
      advance();
      advance();
      t.kind = Tok::Punct;
    } else if (std::strchr("()[]{},:=", c)) {
      advance();
      t.kind = Tok::Punct;
    } else {
      char buf[8];
      if (std::isprint(static_cast<unsigned char>(c)))
        std::snprintf(buf, sizeof buf, "%c", c);
      else
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
      fail(t.loc, std::string("unexpected character '") + buf + "'");
    }
    if (t.text.empty()) t.text = std::string(src_.substr(begin, pos_ - begin));
    return t;
  }

  void lex_number(Token& t) {
    size_t begin = pos_;
    bool neg = at() == '-';
    if (at() == '-' || at() == '+') advance();
    bool is_float = false, bad = false;
    if (src_.substr(pos_, 3) == "inf") {
      for (int i = 0; i < 3; ++i) advance();
      is_float = true;
    } else {
      while (digit(at())) advance();
      if (at() == '.') {
        is_float = true;
        advance();
        while (digit(at())) advance();
      }
      if (at() == 'e' || at() == 'E') {
        is_float = true;
        advance();
        if (at() == '+' || at() == '-') advance();
        if (!digit(at())) bad = true;
        while (digit(at())) advance();
      }
    }
    if (ident_char(at()) || at() == '.') bad = true;
    while (ident_char(at()) || at() == '.') advance();
    t.text = std::string(src_.substr(begin, pos_ - begin));
    if (bad) fail(t.loc, "bad number '" + t.text + "'");
    std::string_view body = src_.substr(begin, pos_ - begin);
    if (body[0] == '+' || body[0] == '-') body.remove_prefix(1);
    if (is_float) {
      t.kind = Tok::Float;
      if (body == "inf") {
        t.dval = std::numeric_limits<double>::infinity();
      } else {
        auto r = std::from_chars(body.data(), body.data() + body.size(), t.dval);
        if (r.ec != std::errc() || r.ptr != body.data() + body.size())
          fail(t.loc, "bad number '" + t.text + "' (not representable as a 64-bit float)");
      }
      if (neg) t.dval = -t.dval;
    } else {
      t.kind = Tok::Int;
      uint64_t u = 0;
      auto r = std::from_chars(body.data(), body.data() + body.size(), u);
      uint64_t limit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + (neg ? 1 : 0);
      if (r.ec != std::errc() || r.ptr != body.data() + body.size() || u > limit)
        fail(t.loc, "bad number '" + t.text + "' (out of range for a 64-bit integer)");
      t.ival = neg ? static_cast<int64_t>(0 - u) : static_cast<int64_t>(u);
    }
  }

  void lex_string(Token& t) {
    char quote = at();
    advance();
    std::string value;
    for (;;) {
      if (at_end() || at() == '\n')
        fail(t.loc, std::string("unterminated string literal (missing the closing ") + quote + ")");
      char c = at();
      if (c == quote) {
        advance();
        break;
      }
      if (c == '\\') {
        advance();
        if (at_end() || at() == '\n') continue;  // reported as unterminated above
        char e = at();
        switch (e) {
          case 'n': value += '\n'; break;
          case 't': value += '\t'; break;
          case '\\':
          case '\'':
          case '"': value += e; break;
          default: value += '\\'; value += e;
        }
        advance();
        continue;
      }
      value += c;
      advance();
    }
    t.kind = Tok::String;
    t.str = std::move(value);
  }

  std::string_view src_;
  std::function<std::string(Loc)> where_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
  Token tok_;
  bool has_ = false;
};

}  // namespace stax::graph_text
