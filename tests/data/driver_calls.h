// What the capture library's harnesses share: a driver call as CUPTI reports it to the library's
// callback, a launch on entry and anything else (an allocation) on exit, always successful.
// Include after fsr_capture.cpp.
#pragma once

static CUresult ok = CUDA_SUCCESS;

static void call(CUpti_CallbackId id, const void* params, const char* symbol = nullptr) {
  CUpti_CallbackData cb{};
  cb.callbackSite = id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel ? CUPTI_API_ENTER : CUPTI_API_EXIT;
  cb.functionParams = params;
  cb.functionReturnValue = &ok;
  cb.symbolName = symbol;
  callback(nullptr, CUPTI_CB_DOMAIN_DRIVER_API, id, &cb);
}
