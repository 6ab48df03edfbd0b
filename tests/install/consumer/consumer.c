/* The smallest useful consumer of an installed metrale: checks that the header and the library
 * agree on the ABI version, then runs one NVFP4 GEMM on the CPU backend (1 x 16 activations of
 * 1.0 times a packed weight row of 6.0: 96.0) and prints the result. Exit 0 when it is right. */
#include <stdint.h>
#include <stdio.h>

#include "metrale/metrale.h"

int main(void) {
  uint16_t act[16], weight[16], out[1] = {0};
  uint8_t packed[8], scale[1];
  int i;
  if (metrale_abi_version() != METRALE_ABI_VERSION) {
    fprintf(stderr, "consumer: library ABI %d, header ABI %d\n", (int)metrale_abi_version(),
            METRALE_ABI_VERSION);
    return 1;
  }
  for (i = 0; i < 16; ++i) {
    act[i] = 0x3F80;    /* bf16 1.0 */
    weight[i] = 0x40C0; /* bf16 6.0: block scale 1, exact in NVFP4 */
  }
  if (metrale_cpu_pack_bf16_weight_to_nvfp4_t(weight, packed, scale, 1, 16, NULL) !=
          METRALE_STATUS_OK ||
      metrale_cpu_nvfp4_gemm_bf16_act_weight_t(act, packed, scale, 1.0f, out, 1, 1, 16, NULL, 0,
                                               NULL) != METRALE_STATUS_OK) {
    fprintf(stderr, "consumer: %s\n", metrale_last_error());
    return 1;
  }
  printf("consumer: metrale %s (ABI %d): 1x16 GEMM = 0x%04x\n", metrale_version(),
         (int)metrale_abi_version(), out[0]);
  return out[0] == 0x42C0 ? 0 : 1; /* bf16 96.0 */
}
