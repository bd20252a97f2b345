// Clang in-process: the cc1 command line, the prelude's precompiled header, source -> optimised
// LLVM IR. See clang_frontend.h, and /work/shared/TOOLCHAIN.md for the measured facts.
#include "plugins/cpu_cpp/clang_frontend.h"

#include <string>
#include <utility>

#include "clang/Basic/Diagnostic.h"
#include "clang/Basic/DiagnosticOptions.h"
#include "clang/CodeGen/CodeGenAction.h"
#include "clang/Driver/Compilation.h"
#include "clang/Driver/Driver.h"
#include "clang/Driver/Job.h"
#include "clang/Driver/Tool.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/CompilerInvocation.h"
#include "clang/Frontend/FrontendAction.h"
#include "clang/Frontend/TextDiagnosticPrinter.h"
#include "clang/Lex/PreprocessorOptions.h"
#include "clang/Serialization/ASTWriter.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/VirtualFileSystem.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"
#include "plugins/cpu_cpp/clang_jit.h"

#ifndef STAX_CLANG_EXECUTABLE
#define STAX_CLANG_EXECUTABLE "/usr/lib/llvm-19/bin/clang"
#endif

namespace stax::cpu {

namespace {

// The input name given to the driver; each compile renames it to "<kernel name>.cpp".
constexpr const char* kDriverInput = "kernel.cpp";
// Where the prelude and its PCH live, in a file system of their own (never on disk).
constexpr const char* kPreludeHeader = "/stax-jit/prelude.hpp";
constexpr const char* kPreludePch = "/stax-jit/prelude.pch";

std::string trim_trailing_newlines(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : " ") + p;
  return out;
}

// SLEEF's vector forms for the loop vectoriser (docs/vector_math.md). scalar_ops.hpp computes
// exp, log, tanh, erf, pow ... with SLEEF's deterministic scalar functions
// `Sleef_cinz_<f>f1_u10purec` / `Sleef_cinz_<f>d1_u10purec`; their AVX-512 forms without FMA,
// `Sleef_cinz_<f>f16_u10avx512fnofma` / `Sleef_cinz_<f>d8_u10avx512fnofma`, return the same bits
// lane by lane (the SLEEF "cinz" contract; vector_math_test checks it). This pass runs just before
// the loop vectoriser and tells it so, in LLVM's vector-function ABI (the attribute
// `vector-function-abi-variant` = `_ZGV_LLVM_N16v_<scalar>(<vector>)` on each call, and a
// declaration of the vector function, as LLVM's InjectTLIMappings does for its own vector
// libraries): a vectorised loop then calls one SLEEF vector function per 16 floats (8 doubles)
// instead of 16 scalar calls, and the result stays bit-identical to the interpreter's. Only for
// functions whose target has AVX-512F (the vector form's ISA); elsewhere the calls stay scalar.
bool sleef_vector_form(llvm::StringRef scalar, std::string* vector_name, unsigned* lanes) {
  if (!scalar.consume_front("Sleef_cinz_") || !scalar.consume_back("_u10purec")) return false;
  if (scalar.consume_back("f1")) {
    *lanes = 16;
    *vector_name = "Sleef_cinz_" + scalar.str() + "f16_u10avx512fnofma";
  } else if (scalar.consume_back("d1")) {
    *lanes = 8;
    *vector_name = "Sleef_cinz_" + scalar.str() + "d8_u10avx512fnofma";
  } else {
    return false;
  }
  static const char* const kKnown[] = {"exp", "exp2", "expm1", "log", "log2", "log10", "log1p",
                                       "sin", "cos", "tan", "tanh", "erf", "pow"};
  for (const char* k : kKnown)
    if (scalar == k) return true;
  return false;
}

struct SleefVectorVariants : llvm::PassInfoMixin<SleefVectorVariants> {
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager&) {
    llvm::Attribute features = f.getFnAttribute("target-features");
    if (!features.isValid() || !features.getValueAsString().contains("+avx512f"))
      return llvm::PreservedAnalyses::all();
    llvm::Module& m = *f.getParent();
    bool changed = false;
    for (llvm::BasicBlock& bb : f) {
      for (llvm::Instruction& inst : bb) {
        auto* call = llvm::dyn_cast<llvm::CallInst>(&inst);
        llvm::Function* callee = call ? call->getCalledFunction() : nullptr;
        if (!callee || !callee->isDeclaration() || call->hasFnAttr("vector-function-abi-variant"))
          continue;
        std::string vector_name;
        unsigned lanes = 0;
        if (!sleef_vector_form(callee->getName(), &vector_name, &lanes)) continue;
        llvm::FunctionType* st = callee->getFunctionType();
        std::vector<llvm::Type*> params;
        for (llvm::Type* t : st->params()) params.push_back(llvm::FixedVectorType::get(t, lanes));
        llvm::FunctionType* vt = llvm::FunctionType::get(
            llvm::FixedVectorType::get(st->getReturnType(), lanes), params, false);
        const bool fresh = m.getFunction(vector_name) == nullptr;
        auto* vf = llvm::dyn_cast<llvm::Function>(m.getOrInsertFunction(vector_name, vt).getCallee());
        if (!vf || vf->getFunctionType() != vt) continue;  // a clash of names: leave it scalar
        if (fresh) {
          vf->setDoesNotAccessMemory();
          vf->setDoesNotThrow();
          llvm::appendToCompilerUsed(m, {vf});  // kept until the vectoriser has seen it
        }
        call->addFnAttr(llvm::Attribute::get(
            f.getContext(), "vector-function-abi-variant",
            "_ZGV_LLVM_N" + std::to_string(lanes) + std::string(st->getNumParams(), 'v') + "_" +
                callee->getName().str() + "(" + vector_name + ")"));
        changed = true;
      }
    }
    // The vector call passes its operands in one zmm register each only when the caller's
    // legal vector width is 512 bits. Clang sets "min-legal-vector-width" from the vector types
    // of the source; a scalar loop has none, and on a CPU whose tuning prefers 256-bit vectors
    // (Intel's Skylake-SP and later) the back end would split each 512-bit operand into two
    // halves while SLEEF reads one zmm: the upper lanes came back as garbage (grad_fuzz_test).
    if (changed) f.addFnAttr("min-legal-vector-width", "512");
    return changed ? llvm::PreservedAnalyses::none() : llvm::PreservedAnalyses::all();
  }
};

// A CompilerInvocation from the cc1 arguments; false (diagnostics in `diag_os`) on failure.
bool make_invocation(const std::vector<std::string>& cc1_args, clang::CompilerInvocation& out,
                     llvm::raw_ostream& diag_os) {
  std::vector<const char*> argv;
  for (const std::string& a : cc1_args) argv.push_back(a.c_str());
  llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> opts = new clang::DiagnosticOptions();
  clang::DiagnosticsEngine diags(new clang::DiagnosticIDs(), opts,
                                 new clang::TextDiagnosticPrinter(diag_os, opts.get()), true);
  return clang::CompilerInvocation::CreateFromArgs(out, argv, diags) &&
         !diags.hasErrorOccurred();
}

// The one input of an invocation: `name`, of the driver input's language (a header for a PCH).
void set_input(clang::CompilerInvocation& inv, const std::string& name, bool header) {
  clang::FrontendOptions& fe = inv.getFrontendOpts();
  clang::InputKind kind =
      fe.Inputs.empty() ? clang::InputKind(clang::Language::CXX) : fe.Inputs.front().getKind();
  fe.Inputs.clear();
  fe.Inputs.emplace_back(name, header ? kind.getHeader() : kind);
  fe.DisableFree = false;  // else every compile leaks ~0.5 MB (TOOLCHAIN.md)
  inv.getCodeGenOpts().DisableFree = false;
  inv.getDiagnosticOpts().ShowColors = false;
}

// Parses its input as a prefix translation unit and serialises the AST into `buffer`.
class PchToMemoryAction : public clang::ASTFrontendAction {
 public:
  explicit PchToMemoryAction(std::shared_ptr<clang::PCHBuffer> buffer)
      : buffer_(std::move(buffer)) {}

 protected:
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance& ci,
                                                        llvm::StringRef) override {
    return std::make_unique<clang::PCHGenerator>(
        ci.getPreprocessor(), ci.getModuleCache(), kPreludePch, /*isysroot=*/"", buffer_,
        llvm::ArrayRef<std::shared_ptr<clang::ModuleFileExtension>>(),
        /*AllowASTWithErrors=*/false, /*IncludeTimestamps=*/false);
  }
  clang::TranslationUnitKind getTranslationUnitKind() override { return clang::TU_Prefix; }
  bool hasASTFileSupport() const override { return false; }

 private:
  std::shared_ptr<clang::PCHBuffer> buffer_;
};

}  // namespace

std::vector<std::string> driver_command_line(const ClangJitOptions& options) {
  std::vector<std::string> args = {"clang",
                                   "-x",
                                   "c++",
                                   "-std=c++17",
                                   "-c",
                                   kDriverInput,
                                   "-O" + std::to_string(options.opt_level),
                                   "-fno-math-errno",
                                   "-ffp-contract=off",
                                   "-fPIE",  // position-independent, as the code generator's model
                                   "-fno-exceptions",
                                   "-fno-rtti",
                                   "-fno-color-diagnostics",
                                   // No .eh_frame: kernels never throw nor are unwound through
                                   // (faults are reported in a struct), and every link of a
                                   // stored object would split, fix up, register and later
                                   // deregister the frames (issue 11: a kernel-cache hit).
                                   "-fno-asynchronous-unwind-tables",
                                   "-fno-unwind-tables"};
  if (options.native_cpu) {
    args.push_back("-march=native");
    // One vector width on every AVX-512 CPU: LLVM's tuning prefers 256-bit vectors on Intel's
    // server parts and 512 on AMD's Zen 4/5, which gave the same source different loops (and
    // SLEEF's 16-lane forms unused) from one machine to the next. Clamped where AVX-512 is absent.
    args.push_back("-mprefer-vector-width=512");
  }
  args.insert(args.end(), options.extra_flags.begin(), options.extra_flags.end());
  return args;
}

bool build_cc1_args(const ClangJitOptions& options, std::vector<std::string>* args,
                    std::string* error) {
  std::string diag_text;
  llvm::raw_string_ostream diag_os(diag_text);
  llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> diag_opts = new clang::DiagnosticOptions();
  diag_opts->ShowColors = false;
  clang::DiagnosticsEngine diags(new clang::DiagnosticIDs(), diag_opts,
                                 new clang::TextDiagnosticPrinter(diag_os, diag_opts.get()),
                                 /*ShouldOwnClient=*/true);

  const std::vector<std::string> command = driver_command_line(options);
  std::vector<const char*> argv;
  for (const std::string& a : command) argv.push_back(a.c_str());

  clang::driver::Driver driver(STAX_CLANG_EXECUTABLE, llvm::sys::getDefaultTargetTriple(), diags,
                               "stax jit");
  driver.setCheckInputsExist(false);
  std::unique_ptr<clang::driver::Compilation> compilation(driver.BuildCompilation(argv));
  diag_os.flush();
  if (!compilation || diags.hasErrorOccurred()) {
    *error = "the clang driver rejected the command line `" + join(command) + "`:\n" +
             trim_trailing_newlines(diag_text);
    return false;
  }
  const clang::driver::JobList& jobs = compilation->getJobs();
  if (jobs.size() != 1 || !llvm::isa<clang::driver::Command>(*jobs.begin())) {
    *error = "the clang driver produced " + std::to_string(jobs.size()) + " jobs for `" +
             join(command) + "`, expected one cc1 job";
    return false;
  }
  const auto& job = llvm::cast<clang::driver::Command>(*jobs.begin());
  if (llvm::StringRef(job.getCreator().getName()) != "clang") {
    *error = "the clang driver's job for `" + join(command) + "` is not cc1 but " +
             job.getCreator().getName();
    return false;
  }
  args->clear();
  for (const char* a : job.getArguments()) args->emplace_back(a);
  if (!args->empty() && args->front() == "-cc1") args->erase(args->begin());
  return true;
}

// ---------------------------------------------------------------------------------------------
// PreludePch

struct PreludePch::Data {
  size_t prelude_lines = 0;                   // newlines in the prelude
  std::shared_ptr<clang::PCHBuffer> pch;      // the serialised AST
  // The prelude and its PCH as files of an in-memory file system, layered over the real one for
  // each compile (a PCH records its header's size and time and checks them when read).
  llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> files() const {
    auto memory = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
    memory->addFile(kPreludeHeader, 0, llvm::MemoryBuffer::getMemBuffer(header, kPreludeHeader));
    memory->addFile(kPreludePch, 0,
                    llvm::MemoryBuffer::getMemBuffer(
                        llvm::StringRef(pch->Data.data(), pch->Data.size()), kPreludePch,
                        /*RequiresNullTerminator=*/false));
    auto overlay =
        llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(llvm::vfs::getRealFileSystem());
    overlay->pushOverlay(memory);
    return overlay;
  }
  std::string header;  // the prelude as the PCH's header file
};

PreludePch::PreludePch() : data_(std::make_unique<Data>()) {}
PreludePch::~PreludePch() = default;

size_t PreludePch::bytes() const { return data_->pch ? data_->pch->Data.size() : 0; }

bool PreludePch::covers(std::string_view source) const {
  return source.size() >= prelude_.size() && source.substr(0, prelude_.size()) == prelude_;
}

std::unique_ptr<PreludePch> PreludePch::build(const std::vector<std::string>& cc1_args,
                                              std::string prelude, std::string* error) {
  std::unique_ptr<PreludePch> out(new PreludePch());
  out->prelude_ = std::move(prelude);
  Data& d = *out->data_;
  d.header = out->prelude_;
  for (char c : d.header) d.prelude_lines += c == '\n';
  d.pch = std::make_shared<clang::PCHBuffer>();
  d.pch->IsComplete = false;
  std::string diag_text;
  llvm::raw_string_ostream diag_os(diag_text);
  auto invocation = std::make_shared<clang::CompilerInvocation>();
  if (!make_invocation(cc1_args, *invocation, diag_os)) {
    diag_os.flush();
    *error = "clang rejected the cc1 arguments: " + trim_trailing_newlines(diag_text);
    return nullptr;
  }
  set_input(*invocation, kPreludeHeader, /*header=*/true);
  clang::CompilerInstance ci;
  ci.setInvocation(std::move(invocation));
  ci.createDiagnostics(new clang::TextDiagnosticPrinter(diag_os, &ci.getDiagnosticOpts()),
                       /*ShouldOwnClient=*/true);
  ci.setVerboseOutputStream(diag_os);
  ci.createFileManager(d.files());
  PchToMemoryAction action(d.pch);
  const bool ok = ci.ExecuteAction(action) && !ci.getDiagnostics().hasErrorOccurred();
  diag_os.flush();
  if (!ok || !d.pch->IsComplete || d.pch->Data.empty()) {
    *error = "the prelude's precompiled header failed: " + trim_trailing_newlines(diag_text);
    return nullptr;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// compile_to_module

std::unique_ptr<llvm::Module> compile_to_module(const std::vector<std::string>& cc1_args,
                                                std::string_view source,
                                                const std::string& file_name,
                                                const PreludePch* pch, llvm::LLVMContext& context,
                                                std::string* diagnostics) {
  std::string diag_text;
  llvm::raw_string_ostream diag_os(diag_text);
  std::unique_ptr<llvm::Module> module;
  {
    auto invocation = std::make_shared<clang::CompilerInvocation>();
    if (!make_invocation(cc1_args, *invocation, diag_os)) {
      diag_os.flush();
      *diagnostics += "clang rejected the cc1 arguments:\n" + diag_text;
      return nullptr;
    }
    set_input(*invocation, file_name, /*header=*/false);
    invocation->getCodeGenOpts().MainFileName = file_name;
    invocation->getCodeGenOpts().PassBuilderCallbacks.push_back([](llvm::PassBuilder& pb) {
      pb.registerVectorizerStartEPCallback(
          [](llvm::FunctionPassManager& fpm, llvm::OptimizationLevel) {
            fpm.addPass(SleefVectorVariants());
          });
    });
    // With the PCH: the source after the prelude, its first line numbered as in the whole
    // source (so diagnostics and the numbered source of a JitError agree).
    const bool use_pch = pch != nullptr && pch->covers(source);
    std::string text;
    if (use_pch) {
      text = "#line " + std::to_string(pch->data().prelude_lines + 1) + " \"" + file_name +
             "\"\n";
      text.append(source.substr(pch->prelude().size()));
      invocation->getPreprocessorOpts().ImplicitPCHInclude = kPreludePch;
    }
    clang::PreprocessorOptions& pp = invocation->getPreprocessorOpts();
    pp.RetainRemappedFileBuffers = false;  // the SourceManager takes ownership of the buffer
    const std::string_view main = use_pch ? std::string_view(text) : source;
    pp.addRemappedFile(file_name, llvm::MemoryBuffer::getMemBufferCopy(
                                      llvm::StringRef(main.data(), main.size()), file_name)
                                      .release());

    clang::CompilerInstance ci;
    ci.setInvocation(std::move(invocation));
    ci.createDiagnostics(new clang::TextDiagnosticPrinter(diag_os, &ci.getDiagnosticOpts()),
                         /*ShouldOwnClient=*/true);
    ci.setVerboseOutputStream(diag_os);  // "N errors generated." goes here, not to stderr
    if (use_pch) ci.createFileManager(pch->data().files());
    clang::EmitLLVMOnlyAction action(&context);
    const bool ok = ci.ExecuteAction(action) && !ci.getDiagnostics().hasErrorOccurred();
    if (ok) module = action.takeModule();
  }
  diag_os.flush();
  *diagnostics += diag_text;
  return module;
}

// ---------------------------------------------------------------------------------------------
// The library's entry point (clang_frontend.h, ClangFrontendApi)

namespace {

PreludePch* build_pch(const std::vector<std::string>& cc1_args, const std::string& prelude,
                      std::string* error) {
  return PreludePch::build(cc1_args, prelude, error).release();
}

void free_pch(PreludePch* pch) { delete pch; }

const ClangFrontendApi kApi = {sizeof(ClangFrontendApi), &build_cc1_args, &build_pch, &free_pch,
                               &compile_to_module};

}  // namespace

}  // namespace stax::cpu

// The one symbol cpu_cpp_clang_frontend.so exports (the library is built with hidden visibility).
extern "C" __attribute__((visibility("default"))) const stax::cpu::ClangFrontendApi*
stax_cpu_clang_frontend_api() {
  return &stax::cpu::kApi;
}
