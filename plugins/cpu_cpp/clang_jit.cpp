// In-process Clang -> LLVM IR -> ORC LLJIT. See clang_jit.h for the contract and
// /work/shared/TOOLCHAIN.md for the measured facts this follows.
#include "plugins/cpu_cpp/clang_jit.h"
#include "plugins/cpu_cpp/clang_frontend.h"
#include "plugins/cpu_cpp/slab_arena.h"
#include "plugins/cpu_cpp/slab_memory_manager.h"
#include "plugins/cpu_cpp/warm_up_object.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <unordered_set>

#include "llvm/Config/llvm-config.h"
#include "llvm/ExecutionEngine/JITLink/EHFrameSupport.h"
#include "llvm/ExecutionEngine/JITLink/JITLink.h"
#include "llvm/ExecutionEngine/JITLink/JITLinkMemoryManager.h"
#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h"
#include "llvm/IR/DiagnosticHandler.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

namespace stax::cpu {

namespace {

constexpr const char* kStage = "cpu_cpp jit";

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::string to_string(llvm::Error err) { return llvm::toString(std::move(err)); }

void initialize_llvm_targets() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

llvm::CodeGenOptLevel codegen_level(int opt_level) {
  switch (opt_level) {
    case 0:
      return llvm::CodeGenOptLevel::None;
    case 1:
      return llvm::CodeGenOptLevel::Less;
    case 2:
      return llvm::CodeGenOptLevel::Default;
    default:
      return llvm::CodeGenOptLevel::Aggressive;
  }
}

// Kernel names end up in file names of diagnostics; keep them to a safe alphabet.
std::string file_name_for(std::string_view name) {
  std::string out;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.';
    out += ok ? c : '_';
  }
  if (out.empty()) out = "kernel";
  return out + ".cpp";
}

std::string trim_trailing_newlines(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : " ") + p;
  return out;
}

}  // namespace

std::string number_source_lines(std::string_view source) {
  std::vector<std::string_view> lines;
  for (size_t pos = 0;;) {
    const size_t end = source.find('\n', pos);
    if (end == std::string_view::npos) {
      if (pos < source.size() || lines.empty()) lines.push_back(source.substr(pos));
      break;
    }
    lines.push_back(source.substr(pos, end - pos));
    pos = end + 1;
  }
  const size_t width = std::max<size_t>(4, std::to_string(lines.size()).size());
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string num = std::to_string(i + 1);
    out += std::string(width - num.size(), ' ') + num + " | ";
    out.append(lines[i]);
    out += '\n';
  }
  return out;
}

JitError::JitError(StaxErrorCode code, std::string location, std::string message)
    : sdk::PluginError(code, (location.empty() ? std::string(kStage) : location) + ": error: " +
                                 message),
      location_(std::move(location)),
      message_(std::move(message)) {}

const std::string& JitError::stage() const {
  static const std::string stage = kStage;
  return stage;
}

namespace detail {

// Frees a PreludePch through the frontend library that made it (clang_frontend.h), which stays
// loaded: the deleter keeps its table, so a JIT destroyed late (at exit, after the plugin's
// statics) still frees it.
struct PchDeleter {
  const ClangFrontendApi* api = nullptr;
  void operator()(PreludePch* p) const { api->free_pch(p); }
};

struct JitState {
  ClangJitOptions options;
  std::mutex mutex;  // guards the LLJIT (links, module removal) and the error strings below
  bool sleef = false;
  // Errors ORC reports asynchronously (e.g. "Symbols not found" while materialising); collected
  // here instead of being printed, and folded into the next Error. Declared before `jit`, whose
  // teardown may still report.
  std::string orc_errors;
  // Errors LLVM reports while linking: without a handler LLVMContext prints them and calls
  // exit(1). (Code generation collects its own, per compile.)
  std::string backend_errors;
  // The memory kernels are linked into (ClangJitOptions::slab_memory; null: LLVM's default
  // manager). Declared before `jit`, which frees its modules' memory when destroyed.
  std::unique_ptr<SlabArena> arena;
  std::unique_ptr<SlabMemoryManager> memory;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  // The target: `target_machine` answers queries (identity, data layout); code generation takes
  // a machine of `idle_machines` (one per compile running at once, made from `machine_builder`:
  // a TargetMachine is not for concurrent use).
  std::unique_ptr<llvm::TargetMachine> target_machine;
  std::optional<llvm::orc::JITTargetMachineBuilder> machine_builder;
  std::mutex machines_mutex;
  std::vector<std::unique_ptr<llvm::TargetMachine>> idle_machines;
  uint64_t next_dylib = 0;  // each module gets a JITDylib of its own: "stax_module_<n>"
  std::string identity;     // identity(), computed on first use
  std::string warm_up_error;  // why the constructor's warm-up link failed; empty: it linked

  // Set up on first use, under setup_mutex (compiles wait for it; then read-only): the driver's
  // cc1 arguments and, when the options have a prelude, its precompiled header (built outside
  // the lock by the compile that sets pch_tried; set under it once built).
  std::mutex setup_mutex;
  std::vector<std::string> cc1_args;
  std::string target_cpu;
  bool pch_tried = false;
  // Made and freed by the frontend library (PchDeleter).
  std::unique_ptr<PreludePch, PchDeleter> pch;
  std::string pch_error;  // why there is no PCH (empty: none asked for, or it was built)

  // Builds cc1_args and target_cpu on first use (under setup_mutex, or in the constructor).
  void ensure_cc1() {
    if (!cc1_args.empty()) return;
    std::string error;
    if (!clang_frontend().build_cc1_args(options, &cc1_args, &error)) {
      cc1_args.clear();
      throw JitError(STAX_ERROR_INVALID_OPTION, "", error);
    }
    for (size_t i = 0; i + 1 < cc1_args.size(); ++i)
      if (cc1_args[i] == "-target-cpu") target_cpu = cc1_args[i + 1];
  }

  // The set-up a compile of `source` needs: the cc1 arguments, and the PCH when the source
  // starts with the options' prelude (built by the first such compile; a PCH that fails to
  // build leaves every source compiled whole, pch_error says why). Null: no PCH for it. The PCH
  // is built outside the lock: a compile that comes while another builds it does not wait for
  // it but compiles its source whole (the same object: docs/jit_compile.md), so that the other
  // compile threads of a cold batch start at once instead of after the build.
  const PreludePch* prepare(std::string_view source) {
    std::unique_lock<std::mutex> lock(setup_mutex);
    ensure_cc1();
    const std::string& prelude = options.prelude;
    if (prelude.empty() || source.substr(0, prelude.size()) != prelude) return nullptr;
    if (pch_tried) return pch.get();  // null while another compile builds it
    pch_tried = true;
    lock.unlock();  // cc1_args no longer change
    const ClangFrontendApi& frontend = clang_frontend();
    std::string error;
    std::unique_ptr<PreludePch, PchDeleter> built(frontend.build_pch(cc1_args, prelude, &error),
                                                  PchDeleter{&frontend});
    lock.lock();
    pch = std::move(built);
    pch_error = std::move(error);
    return pch.get();
  }

  std::string take_orc_errors() {
    std::string out = trim_trailing_newlines(std::move(orc_errors));
    orc_errors.clear();
    return out;
  }
};

// A target machine for one compile's code generation, returned to the idle ones afterwards.
class MachineLease {
 public:
  explicit MachineLease(JitState& s) : s_(s) {
    {
      std::lock_guard<std::mutex> lock(s.machines_mutex);
      if (!s.idle_machines.empty()) {
        machine_ = std::move(s.idle_machines.back());
        s.idle_machines.pop_back();
      }
    }
    if (machine_) return;
    auto made = s.machine_builder->createTargetMachine();
    if (!made)
      throw JitError(STAX_ERROR_UNAVAILABLE, "",
                     "cannot create a target machine: " + to_string(made.takeError()));
    machine_ = std::move(*made);
  }
  ~MachineLease() {
    std::lock_guard<std::mutex> lock(s_.machines_mutex);
    s_.idle_machines.push_back(std::move(machine_));
  }
  MachineLease(const MachineLease&) = delete;
  MachineLease& operator=(const MachineLease&) = delete;
  llvm::TargetMachine& operator*() const { return *machine_; }

 private:
  JitState& s_;
  std::unique_ptr<llvm::TargetMachine> machine_;
};

}  // namespace detail

using detail::JitState;
using detail::MachineLease;

// ---------------------------------------------------------------------------------------------
// CompiledModule

// A JITDylib shared by the modules of one load_objects() batch: removed with the last of them.
struct SharedDylib {
  std::shared_ptr<JitState> state;
  llvm::orc::JITDylib* dylib = nullptr;
  ~SharedDylib() {
    std::lock_guard<std::mutex> lock(state->mutex);
    llvm::consumeError(state->jit->getExecutionSession().removeJITDylib(*dylib));
  }
};

struct CompiledModule::Impl {
  std::shared_ptr<JitState> state;  // declared first: destroyed after the dylib
  llvm::orc::JITDylib* dylib = nullptr;  // this module's own JITDylib, removed on destruction
  // A module of a batch (load_objects): its code is its tracker's in the shared dylib.
  llvm::orc::ResourceTrackerSP tracker;
  std::shared_ptr<SharedDylib> shared_dylib;
  std::string object;                    // the relocatable object the JIT linked
  std::string name;
  std::string diagnostics;
  std::vector<std::pair<std::string, void*>> symbols;
  CompileTimes times;

  ~Impl() {
    if (tracker) {
      std::lock_guard<std::mutex> lock(state->mutex);
      llvm::consumeError(tracker->remove());  // this object's memory; the dylib may stay
      tracker = nullptr;
    }
    shared_dylib.reset();  // the batch's dylib goes with its last module
    if (!dylib) return;
    std::lock_guard<std::mutex> lock(state->mutex);
    // Nothing sensible to do with a failure in a destructor; never print it.
    llvm::consumeError(state->jit->getExecutionSession().removeJITDylib(*dylib));
    dylib = nullptr;
  }
};

CompiledModule::CompiledModule() = default;
CompiledModule::CompiledModule(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CompiledModule::CompiledModule(CompiledModule&& other) noexcept = default;
CompiledModule& CompiledModule::operator=(CompiledModule&& other) noexcept = default;
CompiledModule::~CompiledModule() = default;

void CompiledModule::reset() { impl_.reset(); }

void* CompiledModule::address(std::string_view symbol) const {
  if (!impl_)
    throw JitError(STAX_ERROR_INVALID_ARGUMENT, "",
                   "address('" + std::string(symbol) + "') of an empty module");
  for (const auto& [name, addr] : impl_->symbols)
    if (name == symbol) return addr;
  std::vector<std::string> known;
  for (const auto& entry : impl_->symbols) known.push_back(entry.first);
  throw JitError(STAX_ERROR_INVALID_ARGUMENT, impl_->name,
                 "symbol '" + std::string(symbol) +
                     "' was not asked for in compile() (known: " + join(known) + ")");
}

const std::vector<std::pair<std::string, void*>>& CompiledModule::symbols() const {
  static const std::vector<std::pair<std::string, void*>> none;
  return impl_ ? impl_->symbols : none;
}

const std::string& CompiledModule::name() const {
  static const std::string none;
  return impl_ ? impl_->name : none;
}

const std::string& CompiledModule::diagnostics() const {
  static const std::string none;
  return impl_ ? impl_->diagnostics : none;
}

const std::string& CompiledModule::object() const {
  static const std::string none;
  return impl_ ? impl_->object : none;
}

const CompileTimes& CompiledModule::times() const {
  static const CompileTimes none;
  return impl_ ? impl_->times : none;
}

// ---------------------------------------------------------------------------------------------
// ClangJit: construction

namespace {

// The host's target for code generation at `opt_level`: the small code model, position-
// independent (what LLJIT itself picks for JITLink; a TargetMachine made for a JIT defaults to
// the large model). With the large model every constant of a loop is a movabs of its 64-bit
// address plus a load inside the loop, which LLVM neither hoists nor folds: softmax's exp loop ran
// 20-25% slower (DECISIONS item 37). The small model needs a link's sections within +-2 GiB of
// each other: the slab arena gives them one chunk (slab_arena.h), LLVM's default manager one
// contiguous allocation; calls to the process's libraries (libm, SLEEF) go through JITLink's
// stubs and GOT entries.
llvm::orc::JITTargetMachineBuilder host_machine_builder(int opt_level) {
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) {
    throw JitError(STAX_ERROR_UNAVAILABLE, "",
                   "cannot detect the host for the JIT: " + to_string(jtmb.takeError()));
  }
  jtmb->setCodeGenOptLevel(codegen_level(opt_level));
  jtmb->setCodeModel(llvm::CodeModel::Small);
  jtmb->setRelocationModel(llvm::Reloc::PIC_);
  return std::move(*jtmb);
}

// The LLJIT of `s`, linking into its slab arena when the options allow. What a link costs
// matters for the kernel cache (a hit links a stored object, ~0.1-0.3 ms):
//  - no platform (setUpInactivePlatform): the default GenericLLVMIRPlatform builds an IR module
//    (__dso_handle, atexit helpers) in every JITDylib it sets up, i.e. for every kernel;
//    kernels have no static constructors or destructors and ClangJit never runs initializers;
//  - EH frames registered by a direct call (InProcessEHFrameRegistrar), not through the
//    executor-process-control wrapper.
//  - the memory of a link is carved out of a SlabArena (slab_arena.h), not mapped, protected
//    and unmapped per object (LLVM 19's own slab, MapperJITLinkMemoryManager, was tried first:
//    the link after a failed one segfaulted in BasicLayout::apply).
void create_lljit(JitState& s, llvm::orc::JITTargetMachineBuilder jtmb) {
  if (s.options.slab_memory) {
    const char* env = std::getenv("STAX_JIT_SLAB");
    if (!(env && std::string(env) == "off")) {
      auto arena = std::make_unique<SlabArena>();
      if (arena->init()) {
        s.arena = std::move(arena);
        s.memory = std::make_unique<SlabMemoryManager>(*s.arena);
      }  // else (no memfd_create, e.g. a sandbox): LLVM's default manager
    }
  }
  SlabMemoryManager* memory = s.memory.get();
  auto jit =
      llvm::orc::LLJITBuilder()
          .setJITTargetMachineBuilder(std::move(jtmb))
          .setPlatformSetUp(llvm::orc::setUpInactivePlatform)
          .setObjectLinkingLayerCreator(
              [memory](llvm::orc::ExecutionSession& es, const llvm::Triple&)
                  -> llvm::Expected<std::unique_ptr<llvm::orc::ObjectLayer>> {
                auto layer = memory ? std::make_unique<llvm::orc::ObjectLinkingLayer>(es, *memory)
                                    : std::make_unique<llvm::orc::ObjectLinkingLayer>(es);
                layer->addPlugin(std::make_unique<llvm::orc::EHFrameRegistrationPlugin>(
                    es, std::make_unique<llvm::jitlink::InProcessEHFrameRegistrar>()));
                return std::unique_ptr<llvm::orc::ObjectLayer>(std::move(layer));
              })
          .create();
  if (!jit)
    throw JitError(STAX_ERROR_UNAVAILABLE, "",
                   "cannot create the LLJIT: " + to_string(jit.takeError()));
  s.jit = std::move(*jit);
  JitState* raw = &s;  // the session is owned by the state, so the reporter never outlives it
  s.jit->getExecutionSession().setErrorReporter(
      [raw](llvm::Error err) { raw->orc_errors += to_string(std::move(err)) + "\n"; });
}

// Links warm_up_object() once (and frees it): the path of every kernel-cache hit (load_objects;
// a single load_object is a batch of one). A failure only loses the warm-up (warm_up_error()).
void warm_up(ClangJit& jit, JitState& s) {
  const char* warm_env = std::getenv("STAX_JIT_WARM_UP");
#if defined(__x86_64__)
  if (warm_env && std::string(warm_env) == "off") {
    s.warm_up_error = "STAX_JIT_WARM_UP=off";
  } else try {
    const std::string object = warm_up_object();
    jit.load_objects({{object, {"stax_jit_warm_up"}, "warm_up"}});  // linked and freed
  } catch (const JitError& e) {
    s.warm_up_error = e.what();
  }
#else
  (void)jit;
  (void)warm_env;
  s.warm_up_error = "no warm-up object for this architecture";
#endif
}

}  // namespace

ClangJit::ClangJit(ClangJitOptions options) : state_(std::make_shared<JitState>()) {
  if (options.opt_level < 0 || options.opt_level > 3) {
    throw JitError(STAX_ERROR_INVALID_OPTION, "",
                   "opt_level must be 0..3, got " + std::to_string(options.opt_level));
  }
  JitState& s = *state_;
  s.options = std::move(options);
  initialize_llvm_targets();

  if (s.options.load_sleef && !s.options.sleef_library.empty()) {
    // Kept open for the life of the process: JIT'd code may hold its addresses.
    s.sleef = dlopen(s.options.sleef_library.c_str(), RTLD_NOW | RTLD_GLOBAL) != nullptr;
  }

  // The driver run (a few ms) is needed by the first compile only, not to link stored objects:
  // it runs now only when there are extra flags to check (an unknown flag fails here).
  if (!s.options.extra_flags.empty()) s.ensure_cc1();

  llvm::orc::JITTargetMachineBuilder jtmb = host_machine_builder(s.options.opt_level);
  auto tm = jtmb.createTargetMachine();
  if (!tm)
    throw JitError(STAX_ERROR_UNAVAILABLE, "",
                   "cannot create the target machine: " + to_string(tm.takeError()));
  s.target_machine = std::move(*tm);
  s.machine_builder = jtmb;  // code generation's own machines (MachineLease)
  create_lljit(s, std::move(jtmb));
  warm_up(*this, s);
}

ClangJit::~ClangJit() = default;

const ClangJitOptions& ClangJit::options() const { return state_->options; }
JitMemoryStats ClangJit::memory_stats() const {
  JitMemoryStats out;
  if (!state_->arena) return out;
  const SlabStats st = state_->arena->stats();
  out.slab = true;
  out.chunks = st.chunks;
  out.mapped_bytes = st.mapped_bytes;
  out.used_bytes = st.used_bytes;
  out.pieces = st.pieces;
  return out;
}
const std::string& ClangJit::warm_up_error() const { return state_->warm_up_error; }
bool ClangJit::sleef_available() const { return state_->sleef; }
const std::vector<std::string>& ClangJit::cc1_args() const {
  std::lock_guard<std::mutex> lock(state_->setup_mutex);
  state_->ensure_cc1();
  return state_->cc1_args;
}
std::string ClangJit::pch_error() const {
  std::lock_guard<std::mutex> lock(state_->setup_mutex);
  return state_->pch_error;
}
bool ClangJit::has_pch() const {
  std::lock_guard<std::mutex> lock(state_->setup_mutex);
  return state_->pch != nullptr;
}
const std::string& ClangJit::target_cpu() const {
  std::lock_guard<std::mutex> lock(state_->setup_mutex);
  state_->ensure_cc1();
  return state_->target_cpu;
}

// ---------------------------------------------------------------------------------------------
// ClangJit::compile

namespace {

// Collects the errors LLVM reports while generating the kernel's code and swallows everything
// else, so nothing is printed and LLVMContext::diagnose never exits.
class CollectingDiagnosticHandler : public llvm::DiagnosticHandler {
 public:
  explicit CollectingDiagnosticHandler(std::string* errors) : errors_(errors) {}
  bool handleDiagnostics(const llvm::DiagnosticInfo& info) override {
    if (info.getSeverity() != llvm::DS_Error) return true;
    std::string text;
    llvm::raw_string_ostream os(text);
    llvm::DiagnosticPrinterRawOStream printer(os);
    info.print(printer);
    os.flush();
    *errors_ += "error: " + text + "\n";
    return true;
  }

 private:
  std::string* errors_;  // the compile's own, which outlives the kernel's context
};

// Gives every external definition that is not asked for internal linkage, so that helpers of two
// live kernels cannot collide in the JIT's one dylib.
void internalize_all_but(llvm::Module& module, const std::unordered_set<std::string>& keep) {
  for (llvm::GlobalValue& gv : module.global_values()) {
    if (gv.isDeclaration() || gv.hasLocalLinkage() || gv.hasAppendingLinkage()) continue;
    if (gv.getName().starts_with("llvm.") || keep.count(gv.getName().str())) continue;
    if (auto* go = llvm::dyn_cast<llvm::GlobalObject>(&gv)) go->setComdat(nullptr);
    gv.setLinkage(llvm::GlobalValue::InternalLinkage);
    gv.setVisibility(llvm::GlobalValue::DefaultVisibility);
    gv.setDSOLocal(true);
  }
}

}  // namespace

CompiledModule ClangJit::compile(std::string_view source,
                                 const std::vector<std::string>& symbol_names,
                                 std::string_view name) {
  JitState& s = *state_;
  const std::string kernel_name = name.empty() ? std::string("kernel") : std::string(name);
  const std::string file_name = file_name_for(kernel_name);
  auto fail = [&](const std::string& what, const std::string& details) -> JitError {
    std::string message = what;
    if (!details.empty()) message += ":\n" + trim_trailing_newlines(details);
    message += "\nsource of kernel '" + kernel_name + "' (" + file_name + "):\n" +
               number_source_lines(source);
    return JitError(STAX_ERROR_COMPILE, file_name, trim_trailing_newlines(message));
  };
  const PreludePch* pch = s.prepare(source);

  // 1. Clang: source -> optimised LLVM IR (no lock: each compile has its own instance).
  const auto t_frontend = Clock::now();
  std::string diag_text;
  auto context = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> module =
      clang_frontend().compile_to_module(s.cc1_args, source, file_name, pch, *context,
                                         &diag_text);
  if (!module) throw fail("clang failed to compile kernel '" + kernel_name + "'", diag_text);
  const double frontend_ms = ms_since(t_frontend);

  // 2. Check and prepare the module.
  const std::unordered_set<std::string> wanted(symbol_names.begin(), symbol_names.end());
  for (const std::string& symbol : symbol_names) {
    const llvm::GlobalValue* gv = module->getNamedValue(symbol);
    if (gv && !gv->isDeclaration()) continue;
    std::vector<std::string> defined;
    for (const llvm::Function& f : module->functions())
      if (!f.isDeclaration() && !f.hasLocalLinkage()) defined.push_back(f.getName().str());
    std::string hint = "external functions it defines: " +
                       (defined.empty() ? std::string("none") : join(defined)) +
                       "; a symbol to look up needs extern \"C\"";
    throw fail("kernel '" + kernel_name + "' does not define symbol '" + symbol + "'", hint);
  }
  internalize_all_but(*module, wanted);
  // Clang's own handler was only installed for the frontend; code generation reports here.
  std::string codegen_errors;
  context->setDiagnosticHandler(std::make_unique<CollectingDiagnosticHandler>(&codegen_errors));

  // 3. Code generation to a relocatable object (kept: CompiledModule::object()), on a target
  //    machine of this compile's own.
  const auto t_jit = Clock::now();
  llvm::SmallVector<char, 0> object;
  {
    MachineLease machine(s);
    module->setDataLayout((*machine).createDataLayout());
    llvm::raw_svector_ostream os(object);
    llvm::legacy::PassManager pm;
    if ((*machine).addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
      throw fail("LLVM cannot emit an object file for kernel '" + kernel_name + "'", "");
    pm.run(*module);
  }
  if (!codegen_errors.empty())
    throw fail("LLVM failed to generate code for kernel '" + kernel_name + "'", codegen_errors);
  module.reset();
  context.reset();

  // 4. ORC: link the object into a JITDylib of its own and look the symbols up.
  std::lock_guard<std::mutex> lock(s.mutex);
  s.orc_errors.clear();
  s.backend_errors.clear();
  auto impl = link_object(std::string_view(object.data(), object.size()), symbol_names,
                          kernel_name, fail);
  impl->name = kernel_name;
  impl->diagnostics = trim_trailing_newlines(std::move(diag_text));
  impl->times = CompileTimes{frontend_ms, ms_since(t_jit)};
  return CompiledModule(std::move(impl));
}

std::unique_ptr<CompiledModule::Impl> ClangJit::link_object(
    std::string_view object, const std::vector<std::string>& symbol_names,
    const std::string& kernel_name,
    const std::function<JitError(const std::string&, const std::string&)>& fail) {
  JitState& s = *state_;
  auto jd = s.jit->createJITDylib("stax_module_" + std::to_string(s.next_dylib++));
  if (!jd) throw fail("the JIT cannot create a dylib for kernel '" + kernel_name + "'",
                      to_string(jd.takeError()));
  // The caller holds the mutex, so a failure removes the dylib here (not in ~Impl, which locks).
  auto discard = [&] { s.orc_errors += to_string(s.jit->getExecutionSession().removeJITDylib(*jd)); };
  auto impl = std::make_unique<CompiledModule::Impl>();
  impl->object.assign(object.data(), object.size());
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(object.data(), object.size()),
                                                     kernel_name + ".o");
  if (llvm::Error err = s.jit->addObjectFile(*jd, std::move(buffer))) {
    std::string details = to_string(std::move(err));
    std::string more = s.take_orc_errors();
    discard();
    throw fail("the JIT rejected the object of kernel '" + kernel_name + "'",
               details + (more.empty() ? "" : "\n" + more));
  }
  for (const std::string& symbol : symbol_names) {
    auto addr = s.jit->lookup(*jd, symbol);
    if (!addr) {
      std::string details = to_string(addr.takeError());
      std::string more = s.take_orc_errors();
      discard();
      throw fail("the JIT could not link symbol '" + symbol + "' of kernel '" + kernel_name + "'",
                 (more.empty() ? "" : more + "\n") + details);
    }
    impl->symbols.emplace_back(symbol, addr->toPtr<void*>());
  }
  if (!s.backend_errors.empty()) {
    std::string details = s.backend_errors;
    discard();
    throw fail("LLVM failed to link kernel '" + kernel_name + "'", details);
  }
  impl->state = state_;
  impl->dylib = &*jd;  // from here on removed by ~Impl
  return impl;
}

CompiledModule ClangJit::load_object(std::string_view object,
                                     const std::vector<std::string>& symbol_names,
                                     std::string_view name) {
  // A batch of one: a kernel-cache hit takes one path (the one the constructor warms up),
  // whether its graph has one kernel or several.
  std::vector<CompiledModule> one = load_objects(
      {{object, symbol_names, name.empty() ? std::string("kernel") : std::string(name)}});
  return std::move(one.front());
}

// load_objects' first step: each object as a link graph (its bytes are kept by its module and
// outlive the graph), the asked-for symbols renamed "<symbol>.<index>" so that the objects' equal
// names do not clash.
struct ClangJit::ParsedObjects {
  std::vector<std::unique_ptr<CompiledModule::Impl>> impls;
  std::vector<std::unique_ptr<llvm::jitlink::LinkGraph>> graphs;
  std::vector<std::vector<std::string>> renamed;  // per object, its symbols' link names
};

ClangJit::ParsedObjects ClangJit::parse_objects(
    const std::vector<ObjectToLoad>& objects,
    const std::function<JitError(const std::string&, const std::string&)>& fail) const {
  ParsedObjects out;
  out.renamed.resize(objects.size());
  std::vector<std::unique_ptr<CompiledModule::Impl>>& impls = out.impls;
  std::vector<std::unique_ptr<llvm::jitlink::LinkGraph>>& graphs = out.graphs;
  std::vector<std::vector<std::string>>& renamed = out.renamed;
  for (size_t i = 0; i < objects.size(); ++i) {
    const ObjectToLoad& o = objects[i];
    const std::string kernel_name = o.name.empty() ? std::string("kernel") : o.name;
    auto impl = std::make_unique<CompiledModule::Impl>();
    impl->object.assign(o.object.data(), o.object.size());
    impl->name = kernel_name;
    auto graph = llvm::jitlink::createLinkGraphFromObject(
        llvm::MemoryBufferRef(llvm::StringRef(impl->object), kernel_name + ".o"));
    if (!graph)
      throw fail("the JIT rejected the object of kernel '" + kernel_name + "'",
                 to_string(graph.takeError()));
    for (const std::string& symbol : o.symbol_names) {
      llvm::jitlink::Symbol* found = nullptr;
      for (llvm::jitlink::Symbol* sym : (*graph)->defined_symbols())
        if (sym->hasName() && sym->getScope() != llvm::jitlink::Scope::Local &&
            sym->getName() == symbol)
          found = sym;
      if (!found)
        throw fail("the JIT could not link symbol '" + symbol + "' of kernel '" + kernel_name +
                       "'",
                   "the object does not define it");
      const std::string name = symbol + "." + std::to_string(i);
      llvm::MutableArrayRef<char> stored = (*graph)->allocateContent(llvm::Twine(name));
      found->setName(llvm::StringRef(stored.data(), stored.size()));
      renamed[i].push_back(name);
    }
    impls.push_back(std::move(impl));
    graphs.push_back(std::move(*graph));
  }
  return out;
}

std::vector<CompiledModule> ClangJit::load_objects(const std::vector<ObjectToLoad>& objects) {
  if (objects.empty()) return {};
  JitState& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  s.orc_errors.clear();
  s.backend_errors.clear();
  const auto t_jit = Clock::now();
  std::string all_names;
  for (size_t i = 0; i < objects.size() && i < 8; ++i)
    all_names += (i ? ", '" : "'") + (objects[i].name.empty() ? "kernel" : objects[i].name) + "'";
  if (objects.size() > 8) all_names += ", ...";
  const std::string location = objects.size() == 1 ? objects[0].name + ".o" : "kernel batch";
  auto fail = [&](const std::string& what, const std::string& details) -> JitError {
    return JitError(STAX_ERROR_COMPILE, location,
                    trim_trailing_newlines(what + (details.empty() ? "" : ":\n" + details)));
  };

  // 1. Each object as a link graph, its asked-for symbols renamed.
  ParsedObjects parsed = parse_objects(objects, fail);
  std::vector<std::unique_ptr<CompiledModule::Impl>>& impls = parsed.impls;
  std::vector<std::unique_ptr<llvm::jitlink::LinkGraph>>& graphs = parsed.graphs;
  const std::vector<std::vector<std::string>>& renamed = parsed.renamed;

  // 2. One dylib, every graph under a tracker of its own, one lookup of every symbol.
  auto jd = s.jit->createJITDylib("stax_batch_" + std::to_string(s.next_dylib++));
  if (!jd) throw fail("the JIT cannot create a dylib for kernels " + all_names,
                      to_string(jd.takeError()));
  auto discard = [&] {
    s.orc_errors += to_string(s.jit->getExecutionSession().removeJITDylib(*jd));
  };
  auto& layer = static_cast<llvm::orc::ObjectLinkingLayer&>(s.jit->getObjLinkingLayer());
  for (size_t i = 0; i < graphs.size(); ++i) {
    impls[i]->tracker = jd->createResourceTracker();
    if (llvm::Error err = layer.add(impls[i]->tracker, std::move(graphs[i]))) {
      std::string details = to_string(std::move(err));
      for (auto& impl : impls) impl->tracker = nullptr;
      discard();
      throw fail("the JIT rejected the object of kernel '" + impls[i]->name + "'", details);
    }
  }
  llvm::orc::SymbolLookupSet wanted;
  for (const auto& names : renamed)
    for (const std::string& name : names) wanted.add(s.jit->mangleAndIntern(name));
  auto found = s.jit->getExecutionSession().lookup(
      llvm::orc::makeJITDylibSearchOrder(&*jd, llvm::orc::JITDylibLookupFlags::MatchAllSymbols),
      std::move(wanted));
  if (!found || !s.backend_errors.empty()) {
    std::string details = found ? s.backend_errors : to_string(found.takeError());
    std::string more = s.take_orc_errors();
    for (auto& impl : impls) impl->tracker = nullptr;
    discard();
    throw fail("the JIT could not link kernels " + all_names,
               (more.empty() ? "" : more + "\n") + details);
  }

  // 3. The modules: the original names with their addresses; the dylib shared.
  auto shared = std::make_shared<SharedDylib>();
  shared->state = state_;
  shared->dylib = &*jd;
  const double ms = ms_since(t_jit) / static_cast<double>(objects.size());
  std::vector<CompiledModule> out;
  for (size_t i = 0; i < impls.size(); ++i) {
    auto& impl = impls[i];
    for (size_t k = 0; k < renamed[i].size(); ++k) {
      auto it = found->find(s.jit->mangleAndIntern(renamed[i][k]));
      impl->symbols.emplace_back(objects[i].symbol_names[k],
                                 it == found->end() ? nullptr : it->second.getAddress().toPtr<void*>());
    }
    impl->state = state_;
    impl->shared_dylib = shared;
    impl->times = CompileTimes{0, ms};
    out.push_back(CompiledModule(std::move(impl)));
  }
  return out;
}

std::string ClangJit::identity() const {
  // What decides the cc1 arguments (the driver is a function of these and Clang's version) and
  // the code generator: no driver run, so a process that only links stored objects pays nothing.
  // Computed once (the host CPU's features cost ~0.1 ms to query): the options are fixed.
  JitState& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.identity.empty()) s.identity = compute_identity();
  return s.identity;
}

namespace {
const char* code_model_name(llvm::CodeModel::Model m) {
  switch (m) {
    case llvm::CodeModel::Tiny: return "tiny";
    case llvm::CodeModel::Small: return "small";
    case llvm::CodeModel::Kernel: return "kernel";
    case llvm::CodeModel::Medium: return "medium";
    case llvm::CodeModel::Large: return "large";
  }
  return "?";
}
}  // namespace

std::string ClangJit::compute_identity() const {
  const JitState& s = *state_;
  std::string out = "llvm " LLVM_VERSION_STRING "; triple " +
                    s.target_machine->getTargetTriple().str() + "; opt " +
                    std::to_string(s.options.opt_level) + "; native_cpu " +
                    (s.options.native_cpu ? "1" : "0") +
                    "; passes sleef-vector-variants 1; unwind-tables 0; code model " +
                    code_model_name(s.target_machine->getCodeModel()) + " pic " +
                    (s.target_machine->isPositionIndependent() ? "1" : "0") + "; flags";
  for (const std::string& f : s.options.extra_flags) out += " " + f;
  out += "; host cpu " + llvm::sys::getHostCPUName().str() + "; features";
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  std::vector<std::string> on;
  for (const auto& f : features)
    if (f.getValue()) on.push_back(f.getKey().str());
  std::sort(on.begin(), on.end());
  for (const std::string& f : on) out += " +" + f;
  return out;
}

}  // namespace stax::cpu
