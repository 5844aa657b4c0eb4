"""A stand-in text generator: "Triton says: <prompt>" cut to max_tokens words."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            prompts = pb_utils.get_input_tensor_by_name(request, "prompt").as_numpy()
            limits = pb_utils.get_input_tensor_by_name(request, "max_tokens").as_numpy()
            texts = []
            for row, limit in zip(prompts, limits, strict=True):
                prompt = row[0].decode("utf-8") if isinstance(row[0], bytes) else str(row[0])
                words = f"Triton says: {prompt}".split()[: int(limit[0])]
                texts.append([" ".join(words).encode("utf-8")])
            out = pb_utils.Tensor("completion", np.array(texts, dtype=np.object_))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
