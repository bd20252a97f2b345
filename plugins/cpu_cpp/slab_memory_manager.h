// cpu_cpp's JITLink memory manager on a SlabArena (DECISIONS item 32). Included by clang_jit.cpp
// only (the one translation unit that includes LLVM's JITLink headers).
#pragma once

#include <vector>

#include "llvm/ExecutionEngine/JITLink/JITLink.h"
#include "llvm/ExecutionEngine/JITLink/JITLinkMemoryManager.h"
#include "llvm/ExecutionEngine/Orc/Shared/AllocationActions.h"
#include "plugins/cpu_cpp/slab_arena.h"

namespace stax::cpu {

// The JIT's memory manager on a SlabArena (slab_arena.h): each segment of a link graph is a piece
// of the arena, written through the RW view and placed at the view of its protection (RX code,
// R constants, RW data in pages of its own), so a link neither maps, protects nor unmaps memory.
// A graph's pieces all come from one chunk, so its PC-relative references (the small code model)
// reach each other.
// A failed link (abandon) and a freed module (deallocate) return their pieces; segments of
// finalize lifetime are returned once finalized. Only the in-process JIT uses it.
class SlabMemoryManager : public llvm::jitlink::JITLinkMemoryManager {
 public:
  explicit SlabMemoryManager(SlabArena& arena) : arena_(arena) {}

  // What a finalized allocation keeps: its pieces and the dealloc actions of its finalize
  // actions (e.g. deregistering EH frames), run on deallocate.
  struct Finalized {
    std::vector<SlabArena::Piece> pieces;
    std::vector<llvm::orc::shared::WrapperFunctionCall> dealloc_actions;
  };

  class InFlight : public llvm::jitlink::JITLinkMemoryManager::InFlightAlloc {
   public:
    InFlight(SlabArena& arena, llvm::jitlink::LinkGraph& graph,
             std::vector<SlabArena::Piece> standard, std::vector<SlabArena::Piece> finalize)
        : arena_(arena), graph_(&graph), standard_(std::move(standard)),
          finalize_(std::move(finalize)) {}
    ~InFlight() override { release(); }  // neither finalized nor abandoned: give the pieces back

    void finalize(OnFinalizedFunction on_finalized) override {
      for (const SlabArena::Piece& p : standard_)
        llvm::sys::Memory::InvalidateInstructionCache(p.rx, p.size);
      auto dealloc = llvm::orc::shared::runFinalizeActions(graph_->allocActions());
      if (!dealloc) {
        release();
        on_finalized(dealloc.takeError());
        return;
      }
      for (const SlabArena::Piece& p : finalize_) arena_.free(p);
      finalize_.clear();
      auto* done = new Finalized{std::move(standard_), std::move(*dealloc)};
      standard_.clear();
      on_finalized(FinalizedAlloc(llvm::orc::ExecutorAddr::fromPtr(done)));
    }

    void abandon(OnAbandonedFunction on_abandoned) override {
      release();
      on_abandoned(llvm::Error::success());
    }

   private:
    void release() {
      for (const SlabArena::Piece& p : finalize_) arena_.free(p);
      for (const SlabArena::Piece& p : standard_) arena_.free(p);
      finalize_.clear();
      standard_.clear();
    }
    SlabArena& arena_;
    llvm::jitlink::LinkGraph* graph_;
    std::vector<SlabArena::Piece> standard_, finalize_;
  };

  void allocate(const llvm::jitlink::JITLinkDylib*, llvm::jitlink::LinkGraph& graph,
                OnAllocatedFunction on_allocated) override {
    using llvm::orc::MemProt;
    llvm::jitlink::BasicLayout layout(graph);
    std::vector<SlabArena::Piece> standard, finalize;
    auto give_back = [&] {
      for (const SlabArena::Piece& p : standard) arena_.free(p);
      for (const SlabArena::Piece& p : finalize) arena_.free(p);
    };
    // All the segments' pieces come from one chunk (slab_arena.h, "The code model").
    std::vector<SlabArena::Request> requests;
    for (auto& [group, segment] : layout.segments()) {
      const auto prot = static_cast<unsigned>(group.getMemProt());
      const bool writable = (prot & static_cast<unsigned>(MemProt::Write)) != 0;
      const bool exec = (prot & static_cast<unsigned>(MemProt::Exec)) != 0;
      if (writable && exec) {
        on_allocated(llvm::make_error<llvm::StringError>(
            "cpu_cpp jit: graph '" + graph.getName() +
                "' has a writable and executable segment, which the slab memory manager does "
                "not provide",
            llvm::inconvertibleErrorCode()));
        return;
      }
      const size_t size = segment.ContentSize + segment.ZeroFillSize;
      requests.push_back({std::max<size_t>(size, 1), segment.Alignment.value(), writable});
    }
    std::vector<SlabArena::Piece> pieces;
    if (!arena_.allocate_group(requests, &pieces)) {
      on_allocated(llvm::make_error<llvm::StringError>(
          "cpu_cpp jit: no memory for graph '" + graph.getName() + "': " + arena_.error(),
          llvm::inconvertibleErrorCode()));
      return;
    }
    size_t next = 0;
    for (auto& [group, segment] : layout.segments()) {
      const auto prot = static_cast<unsigned>(group.getMemProt());
      const bool writable = (prot & static_cast<unsigned>(MemProt::Write)) != 0;
      const bool exec = (prot & static_cast<unsigned>(MemProt::Exec)) != 0;
      const SlabArena::Piece& piece = pieces[next++];
      std::memset(piece.rw, 0, piece.size);  // a recycled piece holds an old kernel
      segment.WorkingMem = piece.rw;
      segment.Addr = llvm::orc::ExecutorAddr::fromPtr(writable ? piece.rw
                                                      : exec   ? piece.rx
                                                               : piece.ro);
      (group.getMemLifetime() == llvm::orc::MemLifetime::Standard ? standard : finalize)
          .push_back(piece);
    }
    if (llvm::Error err = layout.apply()) {
      give_back();
      on_allocated(std::move(err));
      return;
    }
    on_allocated(std::make_unique<InFlight>(arena_, graph, std::move(standard),
                                            std::move(finalize)));
  }
  using llvm::jitlink::JITLinkMemoryManager::allocate;

  void deallocate(std::vector<FinalizedAlloc> allocs,
                  OnDeallocatedFunction on_deallocated) override {
    llvm::Error err = llvm::Error::success();
    for (auto it = allocs.rbegin(); it != allocs.rend(); ++it) {
      auto* done = it->release().toPtr<Finalized*>();
      err = llvm::joinErrors(std::move(err),
                             llvm::orc::shared::runDeallocActions(done->dealloc_actions));
      for (const SlabArena::Piece& p : done->pieces) arena_.free(p);
      delete done;
    }
    on_deallocated(std::move(err));
  }
  using llvm::jitlink::JITLinkMemoryManager::deallocate;

 private:
  SlabArena& arena_;
};

}  // namespace stax::cpu
