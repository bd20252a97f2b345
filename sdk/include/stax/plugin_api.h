/* The Stax plugin boundary: plain C (C99 and C++), no exceptions, no C++ types.
 *
 * A plugin is a shared library `libstax_<name>.so` exporting ONE symbol, `stax_plugin_api`, a
 * plain C function `const StaxPluginApi* stax_plugin_api(void)` with default visibility
 * (STAX_DEFINE_PLUGIN in stax/sdk/plugin.hpp writes it; a C plugin writes it by hand with
 * STAX_PLUGIN_EXPORT). The host binds it with Boost.DLL; the plugin needs no Boost at all.
 * The table it returns lives as long as the library.
 *
 * VERSIONING RULE
 *   STAX_PLUGIN_API_MAJOR is bumped for ANY incompatible change: a removed or reordered field or
 *   function, a changed meaning, a changed layout of an array element struct (StaxOpNode,
 *   StaxExprNode, StaxOptionNode), or a renumbered enum value (including the opcodes generated
 *   from ops.def: new ops must be appended at the END of ops.def).
 *   STAX_PLUGIN_API_MINOR is bumped when fields are appended to a struct that starts with
 *   `struct_size`, when functions are appended to StaxPluginApi, or when enum values / opcodes are
 *   appended. MINOR resets to 0 when MAJOR is bumped.
 *   The host refuses a plugin whose MAJOR differs from its own, or whose MINOR is lower than the
 *   MINOR the host requires: the oldest MINOR whose function table holds everything the host
 *   calls (core/backend/plugin_loader.h). A MINOR that only appends fields the host writes raises
 *   nothing, since an older plugin never reads them; the message names both versions. A plugin
 *   with a HIGHER minor loads (the host just ignores what it does not know).
 *   History: 1.0 the initial table; 1.1 appended StaxKernelDesc.index_bits (host-written: 1.0
 *   plugins still load and index in 64 bits); 1.2 appended STAX_DEVICE_OTHER and
 *   StaxDeviceProperties.kind_name (plugin-written: an older plugin leaves it NULL and drives
 *   the cpu or cuda kind), the device-memory functions (device_alloc, device_free, device_copy,
 *   device_synchronize) and StaxRunArgs.buffers_on_device. The host calls a 1.2 function only
 *   when the plugin's table is long enough to hold it (its struct_size), so 1.0 and 1.1 plugins
 *   keep loading and running; and StaxDeviceProperties.concurrent_runs (plugin-written: older
 *   plugins leave it 0 and their runs stay serialised).
 *   1.3 appended (one block at the end of StaxPluginApi) kernel_cache_identity, kernel_serialize
 *   and kernel_deserialize: a compiled kernel as bytes, for the persistent kernel cache
 *   (core/cache). The host calls them only when the table holds them; a plugin without them
 *   (or whose identity is empty) is cached in process only, never on disk.
 *   1.3 (streams, issue 8) appended stream_create / stream_destroy (see STREAMS below): the host
 *   calls them only when the table holds them; without them every call uses the NULL stream.
 *   1.4 (issue 11) appended kernel_deserialize_batch: a graph's cached kernels in one call, so a
 *   backend can set them up together; the host calls it only when the table holds it.
 *   1.5 (issue 27) appended StaxDeviceProperties.extern_epilogues (plugin-written: older plugins
 *   leave it 0 and the host never asks them for epilogues) and StaxRunExternArgs.epilogue,
 *   epilogue_buffers, num_epilogue_buffers (host-written) and epilogue_done (plugin-written: an
 *   older plugin never sets it, and the host runs the epilogue itself): see EPILOGUES below.
 *   1.6 (issue 27) appended StaxDeviceProperties.concurrent_compiles (plugin-written: an older
 *   plugin leaves it 0 and its compiles stay serialised; see OWNERSHIP AND THREADS).
 *   1.7 (issue 29) appended the dtypes STAX_DTYPE_INT16 / UINT16 / UINT32 / UINT64 (9..12;
 *   STAX_NUM_DTYPES 9 -> 13). The codes 0..8 keep their meaning, so 1.6 plugins still load;
 *   they reject a kernel that uses one of the new codes as an invalid dtype (the SDK's
 *   valid_dtype), never misread it.
 *   1.8 (issue 29) appended the opcodes bitwise_and / bitwise_or / bitwise_xor at the end of
 *   ops.def (integer and bool operands). The host emits them only for a plugin whose minor is
 *   at least 8 (BackendPolicy::bitwise_opcodes); for an older plugin integer and / or / xor stay
 *   interpreter fallbacks, as before, so 1.7 plugins keep loading and compiling the same kernels.
 *   The first three fields of StaxPluginApi (struct_size, abi_major, abi_minor) never move.
 *
 * STRUCT SIZES
 *   Every args / properties struct starts with `size_t struct_size`, set by whoever allocates it
 *   to sizeof() in ITS build. A reader never touches a field that lies beyond struct_size (the
 *   C++ SDK does this check); a plugin filling an output struct writes only the fields that fit.
 *   Array element structs (StaxOpNode, StaxExprNode, StaxOptionNode) have a fixed layout per
 *   MAJOR and no struct_size; arrays of extensible structs are passed as arrays of pointers.
 *
 * ERRORS
 *   Every function that can fail returns `StaxError*`: NULL on success, otherwise an object owned
 *   by the caller, inspected with error_code / error_message and released with error_destroy
 *   (all three in the plugin's table). No C++ exception may cross this boundary.
 *
 * OWNERSHIP AND THREADS
 *   Pointers the host passes in (kernel descriptions, options) are valid only during the call;
 *   a plugin copies what it keeps. Pointers a plugin returns (names, thresholds' op list, kernel
 *   source, extern kernel names) stay valid until the next call of the same function on the same
 *   object, or until that object (backend, compiled kernel, error) is destroyed. The host
 *   serialises calls on one backend instance, with one exception the backend opts into: when
 *   its StaxDeviceProperties.concurrent_runs is nonzero, `run` and `run_extern` may be called
 *   from several threads at once, each call with its own buffers, and concurrently with any
 *   other call on that backend except backend_destroy and the destruction of the kernel being
 *   run (a compiled kernel must then be a pure function of its buffers, and run_extern must not
 *   share mutable state between calls). With concurrent_runs 0 the host never overlaps them.
 *   Likewise, when its StaxDeviceProperties.concurrent_compiles is nonzero (ABI 1.6), `compile`
 *   may be called from several threads at once, each call with its own kernel description, and
 *   concurrently with any other call on that backend except backend_configure, backend_destroy
 *   and the calls on a compiled kernel the compile being made returns: the host compiles a
 *   graph's kernels in parallel. The kernel a compile returns must not depend on which compiles
 *   ran beside it (the same description gives the same kernel). With 0 compiles take turns.
 *   A host destroys every compiled kernel before the backend that compiled it.
 *
 * LIFECYCLE
 *   api = stax_plugin_api(); check abi_major/abi_minor; backend_create; backend_configure (exactly
 *   once, possibly with an empty option map, before any other call); properties / thresholds /
 *   split_reduction / compile / run / ...; compiled_kernel_destroy; backend_destroy.
 */
#ifndef STAX_PLUGIN_API_H
#define STAX_PLUGIN_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STAX_PLUGIN_API_MAJOR 1
#define STAX_PLUGIN_API_MINOR 8

/* The exported entry point's name (the symbol the loader looks up). */
#define STAX_PLUGIN_ENTRY_POINT "stax_plugin_api"

/* Marks the entry point exported even when the plugin builds with -fvisibility=hidden. */
#if defined(_WIN32)
#define STAX_PLUGIN_EXPORT __declspec(dllexport)
#else
#define STAX_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* ---- small enums (crossing as int32_t fields; values never change within a MAJOR) ---------- */

/* Element types. Codes 0..8 equal core's stax::DType; core maps its later dtypes to 9..12
 * (stax::plugin_dtype_code, checked by static_asserts in core). Integer values compute in 64 bits
 * (scalar_ops.hpp) and are narrowed (wrapped) on store; uint64 values are held in the unsigned
 * 64-bit type. */
typedef enum StaxDType {
  STAX_DTYPE_FLOAT32 = 0,
  STAX_DTYPE_FLOAT64 = 1,
  STAX_DTYPE_FLOAT16 = 2,
  STAX_DTYPE_BFLOAT16 = 3,
  STAX_DTYPE_INT64 = 4,
  STAX_DTYPE_INT32 = 5,
  STAX_DTYPE_INT8 = 6,
  STAX_DTYPE_UINT8 = 7,
  STAX_DTYPE_BOOL = 8,
  STAX_DTYPE_INT16 = 9,  /* 9..12: ABI 1.7 */
  STAX_DTYPE_UINT16 = 10,
  STAX_DTYPE_UINT32 = 11,
  STAX_DTYPE_UINT64 = 12,
  STAX_NUM_DTYPES = 13
} StaxDType;

typedef enum StaxErrorCode {
  STAX_ERROR_OK = 0,              /* never carried by an error object */
  STAX_ERROR_INVALID_ARGUMENT = 1, /* a malformed description or argument */
  STAX_ERROR_INVALID_OPTION = 2,   /* configure: unknown option, wrong type or value */
  STAX_ERROR_UNSUPPORTED = 3,      /* a valid request the backend does not implement */
  STAX_ERROR_COMPILE = 4,          /* the backend's compiler failed; the message has the source */
  STAX_ERROR_RUNTIME = 5,          /* a launch or execution failed */
  STAX_ERROR_UNAVAILABLE = 6,      /* no device / driver on this machine */
  STAX_ERROR_INTERNAL = 7          /* a bug in the plugin (an unexpected C++ exception, ...) */
} StaxErrorCode;

/* The kind of device a backend drives. STAX_DEVICE_OTHER (ABI 1.2): a kind the plugin names in
 * StaxDeviceProperties.kind_name ("npu"); the host routes graphs to it by that name. */
typedef enum StaxDeviceKind {
  STAX_DEVICE_CPU = 0,
  STAX_DEVICE_CUDA = 1,
  STAX_DEVICE_OTHER = 2
} StaxDeviceKind;

typedef enum StaxReductionType {
  STAX_REDUCTION_NONE = 0, /* a pointwise kernel */
  STAX_REDUCTION_SUM = 1,
  STAX_REDUCTION_PROD = 2,
  STAX_REDUCTION_MAX = 3,  /* NaN-propagating, like maximum */
  STAX_REDUCTION_MIN = 4,
  STAX_REDUCTION_ARGMAX = 5, /* int64 result: linear index over the reduction ranges; ties and
                                NaNs resolve to the first occurrence (NaN counts as largest) */
  STAX_REDUCTION_ARGMIN = 6,
  STAX_REDUCTION_ANY = 7,  /* bool: logical or */
  STAX_REDUCTION_ALL = 8   /* bool: logical and */
} StaxReductionType;

typedef enum StaxBufferRole {
  STAX_BUFFER_INPUT = 0,  /* read only */
  STAX_BUFFER_OUTPUT = 1, /* written (may also be read after being written) */
  STAX_BUFFER_INOUT = 2,  /* read and written in place */
  STAX_BUFFER_TEMP = 3    /* scratch the host allocates for this kernel launch only */
} StaxBufferRole;

/* ---- opcodes --------------------------------------------------------------------------------
 * The special ops first (fixed numbers), then every op of stax/sdk/ops.def in FILE ORDER.
 * Operands are indices of EARLIER op nodes of the same loop body.
 *
 *   CONSTANT          dtype; value in imm_f64 (floating dtypes) or imm_i64 (integer, bool)
 *   LOAD              buffer, expr (element offset from the buffer's data pointer + offset)
 *   MASKED_LOAD       buffer, expr, operands[0] = mask (bool); where the mask is false the
 *                     result is `other` (imm_f64 / imm_i64 as for CONSTANT) and memory is not read
 *   STORE             buffer, expr, operands[0] = value (converted to the buffer's dtype)
 *   REDUCTION         aux = StaxReductionType, operands[0] = value, dtype = result dtype
 *                     (int64 for argmax/argmin, bool for any/all); only valid in a body with
 *                     loop == STAX_BODY_REDUCTION_LOOP; its value may only feed STORE_REDUCTION
 *   STORE_REDUCTION   buffer, expr (must not use reduction variables), operands[0] = a REDUCTION;
 *                     executes once per iteration point, after the reduction loop
 *   INDEX_EXPR        expr, dtype (int64 or int32): the index expression's value
 *   TO_DTYPE          operands[0], dtype = target dtype (stax_scalar::convert semantics)
 *   WHERE             operands[0] = condition (bool), operands[1], operands[2] (same dtype)
 *   INDIRECT_INDEXING operands[0] = an integer value, imm_i64 = size of the indexed dimension,
 *                     aux = STAX_INDIRECT_* flags; its result is used by STAX_EXPR_INDIRECT nodes
 *                     (value = this op's index). CHECK: fail if outside [0, size) (after wrapping);
 *                     WRAP_NEGATIVE: add size to negative values (Python semantics)
 *   unary / binary / compare ops from ops.def: operands[0] (, operands[1]); result dtype is the
 *                     operand dtype, bool for compare ops, logical_*, isnan; bitwise_and /
 *                     bitwise_or / bitwise_xor (ABI 1.8) take integer or bool operands only
 */
typedef enum StaxOpcode {
  STAX_OP_INVALID = 0,
  STAX_OP_CONSTANT = 1,
  STAX_OP_LOAD = 2,
  STAX_OP_MASKED_LOAD = 3,
  STAX_OP_STORE = 4,
  STAX_OP_REDUCTION = 5,
  STAX_OP_STORE_REDUCTION = 6,
  STAX_OP_INDEX_EXPR = 7,
  STAX_OP_TO_DTYPE = 8,
  STAX_OP_WHERE = 9,
  STAX_OP_INDIRECT_INDEXING = 10, /* the ops of ops.def follow: STAX_OP_neg == 11, ... */
#define STAX_UNARY_OP(name) STAX_OP_##name,
#define STAX_BINARY_OP(name) STAX_OP_##name,
#define STAX_COMPARE_OP(name) STAX_OP_##name,
#include "stax/sdk/ops.def"
  STAX_NUM_OPCODES
} StaxOpcode;

#define STAX_OP_FIRST_OPS_DEF 11

#define STAX_INDIRECT_CHECK 1
#define STAX_INDIRECT_WRAP_NEGATIVE 2

/* The op's name ("add", "load", ...), or NULL for an unknown opcode. */
static inline const char* stax_opcode_name(int32_t opcode) {
  switch (opcode) {
    case STAX_OP_CONSTANT: return "constant";
    case STAX_OP_LOAD: return "load";
    case STAX_OP_MASKED_LOAD: return "masked_load";
    case STAX_OP_STORE: return "store";
    case STAX_OP_REDUCTION: return "reduction";
    case STAX_OP_STORE_REDUCTION: return "store_reduction";
    case STAX_OP_INDEX_EXPR: return "index_expr";
    case STAX_OP_TO_DTYPE: return "to_dtype";
    case STAX_OP_WHERE: return "where";
    case STAX_OP_INDIRECT_INDEXING: return "indirect_indexing";
#define STAX_UNARY_OP(name) case STAX_OP_##name: return #name;
#define STAX_BINARY_OP(name) case STAX_OP_##name: return #name;
#define STAX_COMPARE_OP(name) case STAX_OP_##name: return #name;
#include "stax/sdk/ops.def"
    default: return NULL;
  }
}

/* ---- index expressions ------------------------------------------------------------------------
 * An expression is a DAG stored as an array of nodes in topological order (operands come before
 * their users); a root is a node index. Integer arithmetic on int64 (int32 suffices when
 * StaxKernelDesc.index_bits is 32). Index expressions are nonnegative wherever they address
 * memory (the IR guarantees it), so printers may use C `/`, `%`.
 */
typedef enum StaxExprKind {
  STAX_EXPR_CONST = 0,     /* value */
  STAX_EXPR_ITER_VAR = 1,  /* value = k: the iteration variable i<k>, in [0, ranges[k]) */
  STAX_EXPR_REDUCE_VAR = 2, /* value = k: the reduction variable r0_<k>, in
                               [0, reduction_ranges[k]) */
  STAX_EXPR_INDIRECT = 3,  /* value = index of an INDIRECT_INDEXING op node of the same body */
  STAX_EXPR_ADD = 4,       /* lhs + rhs */
  STAX_EXPR_MUL = 5,       /* lhs * rhs */
  STAX_EXPR_FLOORDIV = 6,  /* floor(lhs / rhs), rhs > 0 */
  STAX_EXPR_MOD = 7,       /* lhs - rhs * floor(lhs / rhs), rhs > 0 */
  STAX_EXPR_MIN = 8,
  STAX_EXPR_MAX = 9
} StaxExprKind;

typedef struct StaxExprNode {
  int32_t kind; /* StaxExprKind */
  int32_t lhs;  /* operand node index, -1 if none */
  int32_t rhs;  /* operand node index, -1 if none */
  int32_t reserved; /* 0 */
  int64_t value;
} StaxExprNode;

/* ---- loop bodies -------------------------------------------------------------------------- */

typedef struct StaxOpNode {
  int32_t opcode;      /* StaxOpcode */
  int32_t dtype;       /* StaxDType of the result (STORE*: the stored value's dtype) */
  int32_t operands[3]; /* earlier op node indices, -1 = unused */
  int32_t buffer;      /* index into StaxKernelDesc.buffers, -1 = unused */
  int32_t expr;        /* root index into the body's exprs, -1 = unused */
  int32_t aux;         /* REDUCTION: StaxReductionType; INDIRECT_INDEXING: flags; else 0 */
  double imm_f64;      /* CONSTANT / MASKED_LOAD `other` of a floating dtype */
  int64_t imm_i64;     /* CONSTANT / MASKED_LOAD `other` of an integer/bool dtype;
                          INDIRECT_INDEXING: the size */
} StaxOpNode;

typedef enum StaxBodyLoop {
  STAX_BODY_POINTWISE = 0,     /* runs once per iteration point (uses i vars only) */
  STAX_BODY_REDUCTION_LOOP = 1 /* runs for every reduction point r (lexicographic order) of
                                  the current iteration point; STORE_REDUCTIONs after the loop */
} StaxBodyLoop;

/* Kernel semantics: for every iteration point i (any order, in parallel): for every body in
 * order: run it (once, or over the reduction loop). Bodies communicate only through buffers. */
typedef struct StaxLoopBody {
  size_t struct_size;
  const char* name; /* the IR node it came from, e.g. "buf2" (for comments and dumps) */
  int32_t loop;     /* StaxBodyLoop */
  const StaxOpNode* ops;
  size_t num_ops;
  const StaxExprNode* exprs;
  size_t num_exprs;
} StaxLoopBody;

typedef struct StaxBufferDesc {
  size_t struct_size;
  const char* name;      /* "primals_1", "buf2" */
  int32_t dtype;         /* StaxDType (storage type) */
  int32_t role;          /* StaxBufferRole */
  size_t ndim;
  const int64_t* sizes;   /* ndim entries */
  const int64_t* strides; /* ndim entries, in elements */
  int64_t offset;         /* in elements, from the data pointer given to run */
} StaxBufferDesc;

typedef struct StaxKernelDesc {
  size_t struct_size;
  const char* name; /* a C identifier, unique per compiled graph: "kernel0" */
  const StaxBufferDesc* const* buffers;
  size_t num_buffers;
  const int64_t* ranges; /* iteration ranges, i0 ... */
  size_t num_ranges;
  const int64_t* reduction_ranges; /* r0_0 ...; empty for pointwise kernels */
  size_t num_reduction_ranges;
  int32_t reduction_type; /* StaxReductionType of the (first) REDUCTION op, NONE if none */
  const StaxLoopBody* const* bodies;
  size_t num_bodies;
  /* ABI 1.1: the bit width the host proved enough for index arithmetic: 32 when every index
   * value (loop variables, every subexpression of the LOAD / STORE / INDEX_EXPR expressions with
   * the buffer offset added, indirect indices in [0, size)) fits int32; a plugin may then compute
   * indices in 32 bits (it may always use 64). */
  int32_t index_bits; /* 32 or 64; 0 (an older host) = 64 */
} StaxKernelDesc;

/* ---- options (the backend's YAML subtree) --------------------------------------------------
 * A tree flattened in pre-order: nodes[0] is the root (a MAP, possibly empty); every other node
 * names its parent (an earlier node). Children of a node appear in document order. Scalars keep
 * their YAML text ("3", "true", "sm_90"); the plugin parses them. `location` is "FILE:LINE:COL"
 * of the node in the YAML file, or NULL (for error messages). */
typedef enum StaxOptionKind {
  STAX_OPTION_NULL = 0,
  STAX_OPTION_SCALAR = 1,
  STAX_OPTION_LIST = 2,
  STAX_OPTION_MAP = 3
} StaxOptionKind;

typedef struct StaxOptionNode {
  int32_t kind;         /* StaxOptionKind */
  int32_t parent;       /* -1 for the root */
  const char* key;      /* the key in the parent MAP; NULL for the root and list items */
  const char* value;    /* SCALAR: the text; NULL otherwise */
  const char* location; /* "FILE:LINE:COL" or NULL */
} StaxOptionNode;

typedef struct StaxOptions {
  size_t struct_size;
  const StaxOptionNode* nodes;
  size_t num_nodes;
} StaxOptions;

/* ---- properties --------------------------------------------------------------------------- */

typedef struct StaxDeviceProperties {
  size_t struct_size;
  const char* backend_name; /* "cpu_cpp"; equals the <name> of libstax_<name>.so */
  int32_t kind;             /* StaxDeviceKind */
  const char* device_name;  /* "AMD EPYC ...", "NVIDIA H200" */
  int32_t multiprocessor_count;  /* GPU: SMs; CPU: 0 */
  int32_t warp_size;             /* GPU: 32; CPU: 1 */
  int32_t max_threads_per_multiprocessor; /* GPU: 2048 on H200; CPU: 0 */
  int32_t max_threads_per_block; /* GPU: 1024; CPU: 0 */
  int32_t cores;                 /* CPU: logical cores used by the backend; GPU: 0 */
  int32_t vector_bytes;          /* CPU: SIMD register width in bytes (64 with AVX-512) */
  int32_t compute_capability;    /* GPU: 90 for sm_90; CPU: 0 */
  int64_t memory_bytes;          /* device memory; 0 if unknown */
  int64_t l2_cache_bytes;        /* 0 if unknown */
  int64_t shared_memory_per_block; /* GPU; 0 on CPU */
  /* ABI 1.2: the device kind's name, [a-z][a-z0-9_]*: required with STAX_DEVICE_OTHER ("npu");
   * NULL, or "cpu" / "cuda" matching `kind`, otherwise. Config `devices:` keys use this name. */
  const char* kind_name;
  /* 1.2: nonzero when run / run_extern are reentrant (OWNERSHIP AND THREADS above) */
  int32_t concurrent_runs;
  /* 1.5: nonzero when run_extern runs epilogue kernels fused into matrix products (EPILOGUES) */
  int32_t extern_epilogues;
  /* 1.6: nonzero when compile may be called from several threads at once (OWNERSHIP AND
   * THREADS above) */
  int32_t concurrent_compiles;
} StaxDeviceProperties;

/* Seed §6.6: a value with several users is materialized if any rule holds. */
typedef struct StaxRealizationThresholds {
  size_t struct_size;
  int32_t op_limit;              /* rule 3: more ops than this (CPU 50, GPU 30) */
  int32_t users_limit;           /* rule 2: more users than this (CPU 5; 0 = rule off, GPU) ... */
  int32_t users_near_op_limit;   /* ... and at least this many ops ("close to the limit": CPU 40) */
  int32_t max_reads;             /* rule 4: more buffers read than this (4) */
  int32_t max_accumulated_reads; /* rule 4: more reads after inlining (CPU 12, GPU 8) */
  const int32_t* transcendental_ops; /* rule 1: opcodes (CPU: exp log log10 log1p log2 sigmoid
                                        tanh; GPU: none); owned by the backend */
  size_t num_transcendental_ops;
} StaxRealizationThresholds;

/* ---- the table's argument structs --------------------------------------------------------- */

typedef struct StaxError StaxError;                 /* opaque, plugin-owned type */
typedef struct StaxBackend StaxBackend;             /* opaque */
typedef struct StaxCompiledKernel StaxCompiledKernel; /* opaque */

typedef struct StaxBackendCreateArgs {
  size_t struct_size;
  int32_t device_index; /* cuda:<n>; 0 for the CPU */
  StaxBackend* backend; /* out */
} StaxBackendCreateArgs;

typedef struct StaxBackendConfigureArgs {
  size_t struct_size;
  StaxBackend* backend;
  const StaxOptions* options;
} StaxBackendConfigureArgs;

typedef struct StaxPropertiesArgs {
  size_t struct_size;
  StaxBackend* backend;
  StaxDeviceProperties* properties; /* out: caller sets properties->struct_size */
} StaxPropertiesArgs;

typedef struct StaxThresholdsArgs {
  size_t struct_size;
  StaxBackend* backend;
  StaxRealizationThresholds* thresholds; /* out: caller sets thresholds->struct_size */
} StaxThresholdsArgs;

/* Seed §6.5: into how many segments k >= 1 to split an inner reduction. */
typedef struct StaxSplitReductionArgs {
  size_t struct_size;
  StaxBackend* backend;
  int64_t reduction_numel; /* n_r */
  int64_t output_numel;    /* n */
  int32_t reduction_type;  /* StaxReductionType */
  int64_t segments;        /* out: k */
} StaxSplitReductionArgs;

typedef struct StaxCompileArgs {
  size_t struct_size;
  StaxBackend* backend;
  const StaxKernelDesc* kernel;
  StaxCompiledKernel* compiled; /* out */
} StaxCompileArgs;

typedef struct StaxKernelSourceArgs {
  size_t struct_size;
  StaxCompiledKernel* compiled;
  const char* source; /* out: the generated source text, owned by the compiled kernel */
  size_t source_size; /* out: its length in bytes */
} StaxKernelSourceArgs;

typedef struct StaxRunArgs {
  size_t struct_size;
  StaxCompiledKernel* compiled;
  void* const* buffers; /* data pointers, one per StaxKernelDesc.buffers entry, same order */
  size_t num_buffers;
  void* stream; /* CUstream (NULL = default stream) or NULL on the CPU */
  /* ABI 1.2: 1 when every buffer pointer came from this backend's device_alloc (plus a byte
   * offset); 0 (or an older host) = host memory, which a device backend copies in and out
   * around the launch. */
  int32_t buffers_on_device;
} StaxRunArgs;

typedef struct StaxExternKernelsArgs {
  size_t struct_size;
  StaxBackend* backend;
  const char* const* names; /* out: "mm", "bmm", "addmm", "matmul" ...; owned by the backend */
  size_t num_names;         /* out */
} StaxExternKernelsArgs;

typedef struct StaxTensorDesc {
  size_t struct_size;
  void* data; /* the storage's data pointer; element (idx) is at data + offset + sum idx*stride */
  int32_t dtype;
  size_t ndim;
  const int64_t* sizes;
  const int64_t* strides; /* in elements */
  int64_t offset;         /* in elements */
} StaxTensorDesc;

/* Extern kernel call: inputs first, then outputs (already allocated by the host).
 *
 * EPILOGUES (ABI 1.5). When the backend reports extern_epilogues, the host may pass, with a
 * matrix product (mm, bmm, matmul, addmm) whose one output is contiguous (row-major), an
 * `epilogue`: a kernel compiled by this backend that is pointwise over exactly the output's
 * elements in row-major order (its iteration space, flattened, is the output's flat index) and
 * reads the output only at the point it computes; `epilogue_buffers` are its buffers as for
 * `run`. The backend may run the epilogue's iteration points as soon as the output elements they
 * read are final (in any order, on any threads, each point exactly once: a block of rows still in
 * the cache) and then sets `epilogue_done` to 1 before returning successfully. With
 * epilogue_done 0 (a backend that chose not to, or one older than 1.5) the host runs the
 * epilogue kernel itself after the call. Either way the results are the same bits. */
typedef struct StaxRunExternArgs {
  size_t struct_size;
  StaxBackend* backend;
  const char* name; /* one of the names from extern_kernels */
  const StaxTensorDesc* const* tensors;
  size_t num_tensors;
  size_t num_inputs;
  const double* scalars; /* e.g. addmm: beta, alpha */
  size_t num_scalars;
  void* stream;
  /* ABI 1.5: an epilogue kernel fused into the call (EPILOGUES above); NULL: none */
  StaxCompiledKernel* epilogue;
  void* const* epilogue_buffers;
  size_t num_epilogue_buffers;
  int32_t epilogue_done; /* out: 1 when the backend ran the epilogue */
} StaxRunExternArgs;

/* ---- device memory (ABI 1.2) ------------------------------------------------------------------
 * Buffers of the backend's device, as opaque pointers the host never dereferences (a CUdeviceptr
 * on CUDA; host memory on a CPU backend, which is the SDK's default). A pointer plus a byte
 * offset inside its allocation is a valid copy source / target and run() buffer. */
typedef struct StaxDeviceAllocArgs {
  size_t struct_size;
  StaxBackend* backend;
  size_t bytes;     /* 0 allocates a valid, unique pointer */
  size_t alignment; /* bytes, a power of two; 0 = the backend's default (at least 16) */
  void* data;       /* out */
} StaxDeviceAllocArgs;

typedef struct StaxDeviceFreeArgs {
  size_t struct_size;
  StaxBackend* backend;
  void* data; /* from device_alloc; NULL is a no-op */
} StaxDeviceFreeArgs;

typedef enum StaxCopyKind {
  STAX_COPY_HOST_TO_DEVICE = 0,
  STAX_COPY_DEVICE_TO_HOST = 1,
  STAX_COPY_DEVICE_TO_DEVICE = 2
} StaxCopyKind;

typedef struct StaxDeviceCopyArgs {
  size_t struct_size;
  StaxBackend* backend;
  int32_t kind; /* StaxCopyKind */
  void* dst;
  const void* src;
  size_t bytes;
  void* stream; /* as in StaxRunArgs; the copy is complete when device_synchronize returns */
} StaxDeviceCopyArgs;

typedef struct StaxSynchronizeArgs {
  size_t struct_size;
  StaxBackend* backend;
  void* stream; /* waits for everything queued on it (NULL = the default stream) */
} StaxSynchronizeArgs;

/* ---- compiled-kernel serialization (ABI 1.3; the persistent kernel cache) ---------------------
 * The host keys a cache entry by the canonical kernel description (names normalised), the
 * plugin's name, version and library file, the ABI version, the backend's options and the
 * plugin's cache identity; the value is what kernel_serialize gives. On a hit the host calls
 * kernel_deserialize with the CURRENT kernel description (its names may differ from the one the
 * bytes were made for) and the bytes; the result must behave exactly as compile() of that
 * description would (the same results bit for bit). A deserialize that finds the bytes stale or
 * malformed returns an error (any code): the host drops the entry and compiles. */
typedef struct StaxCacheIdentityArgs {
  size_t struct_size;
  StaxBackend* backend;
  /* out: everything besides the kernel description and the options that decides the compiled
   * code: the compiler's version, the target (CPU name and features, GPU arch), ... Owned by
   * the backend. NULL or "" = this backend's kernels are not cached on disk. */
  const char* identity;
  size_t identity_size;
} StaxCacheIdentityArgs;

typedef struct StaxKernelSerializeArgs {
  size_t struct_size;
  StaxCompiledKernel* compiled;
  const void* data; /* out: owned by the compiled kernel, valid until its next call or destroy */
  size_t size;      /* out */
} StaxKernelSerializeArgs;

typedef struct StaxKernelDeserializeArgs {
  size_t struct_size;
  StaxBackend* backend;
  const StaxKernelDesc* kernel; /* the description the kernel is for (valid during the call) */
  const void* data;             /* bytes from kernel_serialize of an equal description */
  size_t size;
  StaxCompiledKernel* compiled; /* out, destroyed with compiled_kernel_destroy */
} StaxKernelDeserializeArgs;
/* ---- ABI 1.4 (issue 11): a graph's cached kernels at once ------------------------------------
 * kernel_deserialize_batch is kernel_deserialize of `count` kernels in one call: the host passes
 * the kernels of a graph it found in the kernel cache, so that a backend may set them up together
 * (cpu_cpp links their objects in one JIT dylib with one symbol lookup). All or nothing: on an
 * error no kernel was created (compiled[] is left as it was) and the host deserializes them one
 * by one, which names the bad entry. */
typedef struct StaxKernelDeserializeBatchArgs {
  size_t struct_size;
  StaxBackend* backend;
  size_t count;
  const StaxKernelDesc* const* kernels; /* count descriptions (valid during the call) */
  const void* const* data;              /* count byte arrays from kernel_serialize */
  const size_t* sizes;                  /* their sizes */
  StaxCompiledKernel** compiled; /* out: the host's array of count, each kernel destroyed with
                                    compiled_kernel_destroy */
} StaxKernelDeserializeBatchArgs;

/* ---- ABI 1.3 (issue 8): streams ------------------------------------------------------------
 * STREAMS: a stream orders the work queued on it: run (and run_extern) with buffers_on_device,
 * and device_copy, with the same `stream` execute in call order, possibly after the call
 * returns; device_synchronize(stream) waits until all of it is done (host memory written by a
 * device-to-host copy may be read only then). The host gives each concurrent run of a compiled
 * graph its own stream (one per run context) when the backend creates streams and reports
 * concurrent_runs; NULL is the backend's default stream, always valid. A backend whose device is
 * the host may run everything at call time and return NULL from stream_create (the SDK's
 * default). A stream is destroyed after the work on it was synchronised; a host destroys every
 * stream before the backend that created it. The host memory of a host-to-device copy may be
 * reused as soon as device_copy returns (a backend stages it or copies synchronously).
 * Host executor (issue 8): on a backend whose device is not the CPU and that has the 1.2 device
 * memory, a compiled graph's buffers live in device memory for the whole run: kernels run with
 * buffers_on_device = 1 and run_extern receives device pointers in StaxTensorDesc.data. */
typedef struct StaxStreamCreateArgs {
  size_t struct_size;
  StaxBackend* backend;
  void* stream; /* out: a CUstream on CUDA; NULL is allowed (the default stream) */
} StaxStreamCreateArgs;

typedef struct StaxStreamDestroyArgs {
  size_t struct_size;
  StaxBackend* backend;
  void* stream; /* from stream_create; NULL is a no-op */
} StaxStreamDestroyArgs;
/* ---- end of ABI 1.3 (issue 8): streams ------------------------------------------------------ */

typedef struct StaxErrorArgs {
  size_t struct_size;
  const StaxError* error;
  int32_t code;        /* out: StaxErrorCode */
  const char* message; /* out: owned by the error object */
} StaxErrorArgs;

/* ---- the function table ------------------------------------------------------------------- */

typedef struct StaxPluginApi {
  size_t struct_size; /* these three fields never move */
  uint32_t abi_major;
  uint32_t abi_minor;

  const char* plugin_name;    /* "cpu_cpp" */
  const char* plugin_version; /* free text, for `stax plugins` */

  /* errors */
  void (*error_destroy)(StaxError* error);
  void (*error_info)(StaxErrorArgs* args);

  /* backend lifecycle */
  StaxError* (*backend_create)(StaxBackendCreateArgs* args);
  void (*backend_destroy)(StaxBackend* backend);
  StaxError* (*backend_configure)(StaxBackendConfigureArgs* args);

  /* queries */
  StaxError* (*device_properties)(StaxPropertiesArgs* args);
  StaxError* (*realization_thresholds)(StaxThresholdsArgs* args);
  StaxError* (*split_reduction)(StaxSplitReductionArgs* args);

  /* kernels */
  StaxError* (*compile)(StaxCompileArgs* args);
  StaxError* (*kernel_source)(StaxKernelSourceArgs* args);
  StaxError* (*run)(StaxRunArgs* args);
  void (*compiled_kernel_destroy)(StaxCompiledKernel* compiled);

  /* extern kernels (library calls / templates, seed §6.1 item 2) */
  StaxError* (*extern_kernels)(StaxExternKernelsArgs* args);
  StaxError* (*run_extern)(StaxRunExternArgs* args);

  /* ABI 1.2: device memory (see above) */
  StaxError* (*device_alloc)(StaxDeviceAllocArgs* args);
  StaxError* (*device_free)(StaxDeviceFreeArgs* args);
  StaxError* (*device_copy)(StaxDeviceCopyArgs* args);
  StaxError* (*device_synchronize)(StaxSynchronizeArgs* args);

  /* ---- ABI 1.3, kernel cache block (core/cache): compiled-kernel serialization (above) ---- */
  StaxError* (*kernel_cache_identity)(StaxCacheIdentityArgs* args);
  StaxError* (*kernel_serialize)(StaxKernelSerializeArgs* args);
  StaxError* (*kernel_deserialize)(StaxKernelDeserializeArgs* args);
  /* ---- end of the ABI 1.3 kernel cache block ---- */
  /* ---- ABI 1.3 (issue 8): streams (STREAMS above); keep this block together ---- */
  StaxError* (*stream_create)(StaxStreamCreateArgs* args);
  StaxError* (*stream_destroy)(StaxStreamDestroyArgs* args);
  /* ---- end of ABI 1.3 (issue 8): streams ---- */
  /* ---- ABI 1.4 (issue 11): kernel_deserialize_batch (above) ---- */
  StaxError* (*kernel_deserialize_batch)(StaxKernelDeserializeBatchArgs* args);
} StaxPluginApi;

/* The entry point's type. */
typedef const StaxPluginApi* (*StaxPluginApiFn)(void);

#ifdef __cplusplus
}
#endif

#endif /* STAX_PLUGIN_API_H */
