//! The ciphers of the encrypting providers, one key each: `aescbc` (AES-CBC with PKCS#7
//! padding), `aesgcm` (AES-GCM, bound to the storage key) and `secretbox`
//! (XSalsa20-Poly1305). Each lays its output out as kube-apiserver's does, so values are
//! interchangeable with it: `aescbc` IV ‖ ciphertext, `aesgcm` nonce ‖ ciphertext ‖ tag,
//! `secretbox` nonce ‖ tag ‖ ciphertext.

use aes::{Aes128, Aes192, Aes256};
use aes_gcm::aead::AeadInPlace;
use aes_gcm::KeyInit;
use cbc::cipher::block_padding::Pkcs7;
use cbc::cipher::{BlockDecryptMut, BlockEncryptMut, KeyIvInit};
use crypto_secretbox::XSalsa20Poly1305;
use rand::TryRngCore;

/// Why a value could not be sealed or opened with one key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CipherError {
    /// Too short to hold the cipher's nonce or IV (and tag).
    #[error("the stored data is shorter than the cipher needs")]
    TooShort,
    /// AES-CBC data that is not whole blocks, or whose padding is wrong (a wrong key
    /// shows up this way too, most of the time).
    #[error("invalid padding or block size (wrong key, or corrupt data)")]
    BadPadding,
    /// The authentication tag did not match: a wrong key, tampered data, or data moved
    /// from another storage key.
    #[error("message authentication failed (wrong key, tampered data, or a value copied from another key)")]
    Unauthentic,
    /// The operating system gave no random bytes for a nonce.
    #[error("no random bytes for a nonce: {0}")]
    Random(&'static str),
}

/// One key of an encrypting provider: seals values for storage and opens them again.
/// `context` is the storage key; providers that authenticate it (AES-GCM) refuse a value
/// copied to another key.
pub trait ValueTransformer: Send + Sync {
    /// Appends the sealed form of `plain` to `out`.
    fn seal(&self, plain: &[u8], context: &[u8], out: &mut Vec<u8>) -> Result<(), CipherError>;
    /// The plain bytes of `sealed` (the value after its prefix).
    fn open(&self, sealed: &[u8], context: &[u8]) -> Result<Vec<u8>, CipherError>;
}

/// Fills `buf` from the operating system's generator, as upstream reads `crypto/rand`.
fn random(buf: &mut [u8]) -> Result<(), CipherError> {
    rand::rngs::OsRng
        .try_fill_bytes(buf)
        .map_err(|_| CipherError::Random("the OS random source failed"))
}

/// An AES key of one of the three sizes.
#[derive(Clone)]
enum AesKey {
    Aes128([u8; 16]),
    Aes192([u8; 24]),
    Aes256([u8; 32]),
}

impl AesKey {
    fn new(key: &[u8]) -> Option<AesKey> {
        Some(match key.len() {
            16 => AesKey::Aes128(key.try_into().ok()?),
            24 => AesKey::Aes192(key.try_into().ok()?),
            32 => AesKey::Aes256(key.try_into().ok()?),
            _ => return None,
        })
    }
}

/// The key sizes AES takes (16, 24 or 32 bytes), as upstream's `aescbc` and `aesgcm`.
pub const AES_KEY_SIZES: &[usize] = &[16, 24, 32];
/// The key size of `secretbox`.
pub const SECRETBOX_KEY_SIZES: &[usize] = &[32];

const AES_BLOCK: usize = 16;

/// `aescbc`: a random IV, then the PKCS#7-padded value in CBC mode. Not authenticated
/// (upstream recommends against it for new setups, but still serves it).
pub struct AesCbc(AesKey);

impl AesCbc {
    /// `None` when `key` is not 16, 24 or 32 bytes.
    pub fn new(key: &[u8]) -> Option<AesCbc> {
        AesKey::new(key).map(AesCbc)
    }
}

impl ValueTransformer for AesCbc {
    fn seal(&self, plain: &[u8], _context: &[u8], out: &mut Vec<u8>) -> Result<(), CipherError> {
        let mut iv = [0u8; AES_BLOCK];
        random(&mut iv)?;
        let padded = (plain.len() / AES_BLOCK + 1) * AES_BLOCK;
        let start = out.len();
        out.reserve(AES_BLOCK + padded);
        out.extend_from_slice(&iv);
        out.extend_from_slice(plain);
        out.resize(start + AES_BLOCK + padded, 0);
        let buf = &mut out[start + AES_BLOCK..];
        let sealed = match &self.0 {
            AesKey::Aes128(k) => cbc::Encryptor::<Aes128>::new(k.into(), &iv.into())
                .encrypt_padded_mut::<Pkcs7>(buf, plain.len())
                .map(<[u8]>::len),
            AesKey::Aes192(k) => cbc::Encryptor::<Aes192>::new(k.into(), &iv.into())
                .encrypt_padded_mut::<Pkcs7>(buf, plain.len())
                .map(<[u8]>::len),
            AesKey::Aes256(k) => cbc::Encryptor::<Aes256>::new(k.into(), &iv.into())
                .encrypt_padded_mut::<Pkcs7>(buf, plain.len())
                .map(<[u8]>::len),
        };
        // The buffer was sized for the padding, so this cannot fail.
        debug_assert_eq!(sealed.ok(), Some(padded));
        Ok(())
    }

    fn open(&self, sealed: &[u8], _context: &[u8]) -> Result<Vec<u8>, CipherError> {
        if sealed.len() < AES_BLOCK {
            return Err(CipherError::TooShort);
        }
        let (iv, data) = sealed.split_at(AES_BLOCK);
        let iv: &[u8; AES_BLOCK] = iv.try_into().map_err(|_| CipherError::TooShort)?;
        let mut out = vec![0u8; data.len()];
        let len = match &self.0 {
            AesKey::Aes128(k) => cbc::Decryptor::<Aes128>::new(k.into(), iv.into())
                .decrypt_padded_b2b_mut::<Pkcs7>(data, &mut out)
                .map(<[u8]>::len),
            AesKey::Aes192(k) => cbc::Decryptor::<Aes192>::new(k.into(), iv.into())
                .decrypt_padded_b2b_mut::<Pkcs7>(data, &mut out)
                .map(<[u8]>::len),
            AesKey::Aes256(k) => cbc::Decryptor::<Aes256>::new(k.into(), iv.into())
                .decrypt_padded_b2b_mut::<Pkcs7>(data, &mut out)
                .map(<[u8]>::len),
        }
        .map_err(|_| CipherError::BadPadding)?;
        out.truncate(len);
        Ok(out)
    }
}

const GCM_NONCE: usize = 12;
const TAG: usize = 16;

type Aes192Gcm = aes_gcm::AesGcm<Aes192, aes_gcm::aead::consts::U12>;

/// The AES-GCM cipher of a key, built once.
enum Gcm {
    Aes128(Box<aes_gcm::Aes128Gcm>),
    Aes192(Box<Aes192Gcm>),
    Aes256(Box<aes_gcm::Aes256Gcm>),
}

/// `aesgcm`: a random 96-bit nonce, then the sealed value with its tag; the storage key
/// is the additional authenticated data, as upstream binds a value to its etcd key.
/// Random nonces mean a key should be rotated well before 2^32 writes (upstream's
/// advice).
pub struct AesGcm(Gcm);

impl AesGcm {
    /// `None` when `key` is not 16, 24 or 32 bytes.
    pub fn new(key: &[u8]) -> Option<AesGcm> {
        let gcm = match AesKey::new(key)? {
            AesKey::Aes128(k) => Gcm::Aes128(Box::new(aes_gcm::Aes128Gcm::new(&k.into()))),
            AesKey::Aes192(k) => Gcm::Aes192(Box::new(Aes192Gcm::new(&k.into()))),
            AesKey::Aes256(k) => Gcm::Aes256(Box::new(aes_gcm::Aes256Gcm::new(&k.into()))),
        };
        Some(AesGcm(gcm))
    }
}

impl ValueTransformer for AesGcm {
    fn seal(&self, plain: &[u8], context: &[u8], out: &mut Vec<u8>) -> Result<(), CipherError> {
        let mut nonce = [0u8; GCM_NONCE];
        random(&mut nonce)?;
        out.reserve(GCM_NONCE + plain.len() + TAG);
        out.extend_from_slice(&nonce);
        let start = out.len();
        out.extend_from_slice(plain);
        let buf = &mut out[start..];
        let nonce = (&nonce).into();
        let tag = match &self.0 {
            Gcm::Aes128(c) => c.encrypt_in_place_detached(nonce, context, buf),
            Gcm::Aes192(c) => c.encrypt_in_place_detached(nonce, context, buf),
            Gcm::Aes256(c) => c.encrypt_in_place_detached(nonce, context, buf),
        }
        // Only a value over 64 GiB is refused.
        .map_err(|_| CipherError::TooShort)?;
        out.extend_from_slice(&tag);
        Ok(())
    }

    fn open(&self, sealed: &[u8], context: &[u8]) -> Result<Vec<u8>, CipherError> {
        if sealed.len() < GCM_NONCE + TAG {
            return Err(CipherError::TooShort);
        }
        let (nonce, rest) = sealed.split_at(GCM_NONCE);
        let (data, tag) = rest.split_at(rest.len() - TAG);
        let nonce: &[u8; GCM_NONCE] = nonce.try_into().map_err(|_| CipherError::TooShort)?;
        let tag: &[u8; TAG] = tag.try_into().map_err(|_| CipherError::TooShort)?;
        let (nonce, tag) = (nonce.into(), tag.into());
        let mut out = data.to_vec();
        match &self.0 {
            Gcm::Aes128(c) => c.decrypt_in_place_detached(nonce, context, &mut out, tag),
            Gcm::Aes192(c) => c.decrypt_in_place_detached(nonce, context, &mut out, tag),
            Gcm::Aes256(c) => c.decrypt_in_place_detached(nonce, context, &mut out, tag),
        }
        .map_err(|_| CipherError::Unauthentic)?;
        Ok(out)
    }
}

const SECRETBOX_NONCE: usize = 24;

/// `secretbox`: NaCl's XSalsa20-Poly1305 with a random 192-bit nonce. NaCl's box takes
/// no additional data, so (as upstream) the storage key is not bound.
pub struct Secretbox(Box<XSalsa20Poly1305>);

impl Secretbox {
    /// `None` when `key` is not 32 bytes.
    pub fn new(key: &[u8]) -> Option<Secretbox> {
        let key: &[u8; 32] = key.try_into().ok()?;
        Some(Secretbox(Box::new(XSalsa20Poly1305::new(key.into()))))
    }
}

impl ValueTransformer for Secretbox {
    fn seal(&self, plain: &[u8], _context: &[u8], out: &mut Vec<u8>) -> Result<(), CipherError> {
        let mut nonce = [0u8; SECRETBOX_NONCE];
        random(&mut nonce)?;
        out.reserve(SECRETBOX_NONCE + TAG + plain.len());
        out.extend_from_slice(&nonce);
        let tag_at = out.len();
        out.extend_from_slice(&[0u8; TAG]);
        out.extend_from_slice(plain);
        let tag = self
            .0
            .encrypt_in_place_detached((&nonce).into(), b"", &mut out[tag_at + TAG..])
            .map_err(|_| CipherError::TooShort)?;
        out[tag_at..tag_at + TAG].copy_from_slice(&tag);
        Ok(())
    }

    fn open(&self, sealed: &[u8], _context: &[u8]) -> Result<Vec<u8>, CipherError> {
        if sealed.len() < SECRETBOX_NONCE + TAG {
            return Err(CipherError::TooShort);
        }
        let (nonce, rest) = sealed.split_at(SECRETBOX_NONCE);
        let (tag, data) = rest.split_at(TAG);
        let nonce: &[u8; SECRETBOX_NONCE] = nonce.try_into().map_err(|_| CipherError::TooShort)?;
        let tag: &[u8; TAG] = tag.try_into().map_err(|_| CipherError::TooShort)?;
        let mut out = data.to_vec();
        self.0
            .decrypt_in_place_detached(nonce.into(), b"", &mut out, tag.into())
            .map_err(|_| CipherError::Unauthentic)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn providers() -> Vec<(&'static str, Box<dyn ValueTransformer>)> {
        vec![
            ("aescbc-128", Box::new(AesCbc::new(&[1; 16]).unwrap())),
            ("aescbc-192", Box::new(AesCbc::new(&[1; 24]).unwrap())),
            ("aescbc-256", Box::new(AesCbc::new(&[1; 32]).unwrap())),
            ("aesgcm-128", Box::new(AesGcm::new(&[1; 16]).unwrap())),
            ("aesgcm-192", Box::new(AesGcm::new(&[1; 24]).unwrap())),
            ("aesgcm-256", Box::new(AesGcm::new(&[1; 32]).unwrap())),
            ("secretbox", Box::new(Secretbox::new(&[1; 32]).unwrap())),
        ]
    }

    #[test]
    fn every_provider_round_trips_values_of_every_length() {
        for (name, p) in providers() {
            for len in [0, 1, 15, 16, 17, 100, 4096] {
                let plain: Vec<u8> = (0..len).map(|i| i as u8).collect();
                let mut sealed = b"prefix:".to_vec();
                p.seal(&plain, b"/registry/secrets/ns/a", &mut sealed)
                    .unwrap();
                assert!(sealed.starts_with(b"prefix:"), "{name}");
                let body = &sealed[7..];
                if len >= 16 {
                    assert!(
                        !body.windows(16).any(|w| w == &plain[..16]),
                        "{name}: plain bytes visible"
                    );
                }
                let opened = p.open(body, b"/registry/secrets/ns/a").unwrap();
                assert_eq!(opened, plain, "{name} len {len}");
            }
        }
    }

    #[test]
    fn the_same_value_seals_differently_each_time() {
        for (name, p) in providers() {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            p.seal(b"same", b"k", &mut a).unwrap();
            p.seal(b"same", b"k", &mut b).unwrap();
            assert_ne!(a, b, "{name}: nonce or IV reused");
        }
    }

    #[test]
    fn layouts_are_upstreams() {
        let plain = [7u8; 20];
        let mut v = Vec::new();
        AesCbc::new(&[1; 32])
            .unwrap()
            .seal(&plain, b"", &mut v)
            .unwrap();
        assert_eq!(v.len(), 16 + 32, "IV, then two padded blocks");
        let mut v = Vec::new();
        AesGcm::new(&[1; 32])
            .unwrap()
            .seal(&plain, b"", &mut v)
            .unwrap();
        assert_eq!(v.len(), 12 + 20 + 16, "nonce, ciphertext, tag");
        let mut v = Vec::new();
        Secretbox::new(&[1; 32])
            .unwrap()
            .seal(&plain, b"", &mut v)
            .unwrap();
        assert_eq!(v.len(), 24 + 16 + 20, "nonce, tag, ciphertext");
    }

    #[test]
    fn a_wrong_key_does_not_open() {
        let plain = b"{\"kind\":\"Secret\",\"data\":{\"password\":\"aHVudGVyMg==\"}}";
        let pairs: Vec<(Box<dyn ValueTransformer>, Box<dyn ValueTransformer>)> = vec![
            (
                Box::new(AesGcm::new(&[1; 32]).unwrap()),
                Box::new(AesGcm::new(&[2; 32]).unwrap()),
            ),
            (
                Box::new(Secretbox::new(&[1; 32]).unwrap()),
                Box::new(Secretbox::new(&[2; 32]).unwrap()),
            ),
            (
                Box::new(AesCbc::new(&[1; 32]).unwrap()),
                Box::new(AesCbc::new(&[2; 32]).unwrap()),
            ),
        ];
        for (right, wrong) in pairs {
            let mut sealed = Vec::new();
            right.seal(plain, b"k", &mut sealed).unwrap();
            // CBC has no tag: a wrong key yields bad padding, or (rarely) garbage.
            if let Ok(opened) = wrong.open(&sealed, b"k") {
                assert_ne!(opened, plain);
            }
        }
    }

    #[test]
    fn tampered_or_moved_aead_values_are_refused() {
        let aeads: Vec<Box<dyn ValueTransformer>> = vec![
            Box::new(AesGcm::new(&[3; 16]).unwrap()),
            Box::new(Secretbox::new(&[3; 32]).unwrap()),
        ];
        for p in aeads {
            let mut sealed = Vec::new();
            p.seal(b"the value", b"/registry/secrets/a/b", &mut sealed)
                .unwrap();
            for i in 0..sealed.len() {
                let mut bad = sealed.clone();
                bad[i] ^= 1;
                assert_eq!(
                    p.open(&bad, b"/registry/secrets/a/b"),
                    Err(CipherError::Unauthentic),
                    "byte {i} flipped"
                );
            }
            assert_eq!(
                p.open(&sealed[..10], b"/registry/secrets/a/b"),
                Err(CipherError::TooShort)
            );
        }
        // AES-GCM binds the storage key: the same bytes under another key do not open.
        let gcm = AesGcm::new(&[3; 16]).unwrap();
        let mut sealed = Vec::new();
        gcm.seal(b"v", b"/registry/secrets/a/b", &mut sealed)
            .unwrap();
        assert_eq!(
            gcm.open(&sealed, b"/registry/secrets/a/c"),
            Err(CipherError::Unauthentic)
        );
    }

    #[test]
    fn key_sizes_are_checked() {
        for len in [0, 8, 15, 17, 31, 33, 64] {
            assert!(AesCbc::new(&vec![0; len]).is_none(), "aescbc {len}");
            assert!(AesGcm::new(&vec![0; len]).is_none(), "aesgcm {len}");
        }
        assert!(Secretbox::new(&[0; 16]).is_none());
        assert!(Secretbox::new(&[0; 24]).is_none());
    }

    #[test]
    fn cbc_refuses_partial_blocks() {
        let p = AesCbc::new(&[1; 16]).unwrap();
        let mut sealed = Vec::new();
        p.seal(b"abc", b"", &mut sealed).unwrap();
        assert_eq!(p.open(&sealed[..20], b""), Err(CipherError::BadPadding));
        assert_eq!(p.open(&sealed[..5], b""), Err(CipherError::TooShort));
    }
}
