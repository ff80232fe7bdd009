/* An RP2040 second-stage bootloader (boot2) for a W25Q080-class flash in standard SPI, read command 03h, written
 * for mcudeploy from the RP2040 Datasheet (2.8.1 boot sequence: the boot ROM copies these 256 bytes to SRAM, checks
 * the CRC-32 in their last word and runs them; 4.10 SSI: the DW_apb_ssi registers of XIP_SSI). It turns on XIP in
 * the plainest mode the flash has (one data line, a 24-bit address, no dummy cycles), at clk_sys / 4, then enters
 * the firmware's vector table at 0x10000100, or returns to a caller that passed a return address.
 * Position-independent: it runs from SRAM. Assembled and checksummed into firmware/runtime/boot_rp2040_boot2.c by
 * `python -m mcudeploy.device.boot2`. Not yet run on silicon. */
    .syntax unified
    .cpu cortex-m0plus
    .thumb
    .text
    .global boot2
    .thumb_func
boot2:
    push {lr}
    ldr r3, =0x18000000          /* XIP_SSI */
    movs r1, #0
    str r1, [r3, #0x08]          /* SSIENR: off while it is set up */
    movs r1, #4
    str r1, [r3, #0x14]          /* BAUDR: SCK = clk_sys / 4 */
    ldr r1, =((31 << 16) | (3 << 8))
    str r1, [r3, #0x00]          /* CTRLR0: standard SPI frame, 32-bit data frames, TMOD EEPROM read */
    movs r1, #0
    str r1, [r3, #0x04]          /* CTRLR1: NDF 0, one data frame a read */
    ldr r0, =0x180000F4
    ldr r1, =((0x03 << 24) | (2 << 8) | (6 << 2))
    str r1, [r0]                 /* SPI_CTRLR0: XIP_CMD 03h, INST_L 8 bits, ADDR_L 24 bits, no wait cycles */
    movs r1, #1
    str r1, [r3, #0x08]          /* SSIENR: on; flash reads at 0x10000000 now go through XIP */
    pop {r0}
    cmp r0, #0
    beq enter_firmware           /* lr 0: the boot ROM's flash boot, which expects boot2 to start the image */
    bx r0
enter_firmware:
    ldr r0, =0x10000100          /* the vector table, right after boot2 */
    ldr r1, =0xE000ED08          /* VTOR */
    str r0, [r1]
    ldmia r0, {r0, r1}
    msr msp, r0
    bx r1
    .ltorg
