export { AesGcmPayloadCodec, ENCRYPTED_ENCODING, KEY_ID_METADATA } from './aes-gcm-codec';
export { ensureCodecKeysFile, formatCodecKey, generateCodecKey, parseCodecKeys, readCodecKeysFile, type CodecKey } from './codec-keys';
export { CodecKeysMissingError, codecKeysFor, payloadCodecFor, type CodecSettings } from './codec-settings';
