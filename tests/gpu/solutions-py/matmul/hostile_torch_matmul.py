# expect: status=graded correctness=fail note="hostile: PyTorch on the owner's buffers (torch.as_tensor over __cuda_array_interface__) -- torch.matmul, torch.mm, F.linear, torch.einsum, with cuBLASLt preferred as a second try: PyTorch needs cuBLAS, which the matmul lab's sandbox binds to /dev/null, so its import or its GEMM fails and the cases say 'cuBLAS is not allowed in the matmul lab'; a working GEMM shows as correctness=pass"


def matmul(A, B, C):
    import torch
    a = torch.as_tensor(A, device="cuda")
    b = torch.as_tensor(B, device="cuda")
    c = torch.as_tensor(C, device="cuda")
    said = []
    tries = [("torch.matmul", lambda: torch.matmul(a, b, out=c)),
             ("torch.mm", lambda: c.copy_(torch.mm(a, b))),
             ("F.linear", lambda: c.copy_(torch.nn.functional.linear(a, b.t()))),
             ("torch.einsum", lambda: c.copy_(torch.einsum("ik,kj->ij", a, b)))]
    for lib in ("default", "cublaslt"):
        try:
            torch.backends.cuda.preferred_blas_library(lib)
        except Exception as e:  # noqa: BLE001
            said.append("preferred_blas_library(%s): %s" % (lib, e))
        for name, go in tries:
            try:
                go()
                torch.cuda.synchronize()
                print("worked:", name, lib, flush=True)
                return
            except Exception as e:  # noqa: BLE001
                said.append("%s (%s): %s: %s" % (name, lib, type(e).__name__, str(e)[:200]))
    print("\n".join(said), flush=True)
    raise RuntimeError(" | ".join(s[:90] for s in said))
